"""The edges of the pipeline: files, schemas on disk, the Helm engine, the repo writer and Git."""
