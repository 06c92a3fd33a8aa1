"""Container-level edits: images set from configuration, or blanked for module-resources."""

from __future__ import annotations

from btp_gitops.generator.core.objects import Manifest, containers, kind_of


def set_container_image(manifests: list[Manifest], container_name: str, image: str) -> list[Manifest]:
    """Point every container named `container_name` at `image` (BTP Manager's image injection)."""
    for manifest in manifests:
        for container in containers(manifest.body):
            if container.get("name") == container_name:
                container["image"] = image
    return manifests


def blank_deployment_images(manifests: list[Manifest]) -> list[Manifest]:
    """Empty every container image of Deployments: BTP Manager injects them at runtime."""
    for manifest in manifests:
        if kind_of(manifest.body) == "Deployment":
            for container in containers(manifest.body):
                if "image" in container:
                    container["image"] = ""
    return manifests
