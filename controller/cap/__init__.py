"""The controller's CAP side: tenant records in the source repository, and the reconcilers of CAP objects."""
