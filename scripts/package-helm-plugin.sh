#!/usr/bin/env bash
# Package the Helm 4 plugin (helm-plugin/) for distribution, signed, as Helm 4 installs plugins
# by default: `helm plugin install` of a tarball checks the provenance file beside it against
# the user's keyring (and refuses an unsigned one unless given --verify=false).
#
#   SIGNING_KEY=<ASCII-armored PGP private key> [SIGNING_KEY_PASSPHRASE=...] \
#     bash scripts/package-helm-plugin.sh DEST
#
# writes into DEST:
#   btp-gitops-<version>.tgz        the plugin (`helm plugin package`)
#   btp-gitops-<version>.tgz.prov   its provenance, signed with the key (`--sign`)
#   btp-gitops-signing-key.asc      the public key that verifies it, for the release page
# and checks the result with `helm plugin verify` against that public key alone.
#
# The key lives only in a temporary GnuPG home removed on exit; Helm signs with its own OpenPGP
# code, from a binary keyring exported there (the form Helm reads). HELM names Helm 4 (default
# `helm` on PATH).
set -euo pipefail

dest=${1:?usage: package-helm-plugin.sh DEST}
: "${SIGNING_KEY:?SIGNING_KEY (an ASCII-armored PGP private key) is not set}"
helm=${HELM:-helm}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
work=$(mktemp -d)
export GNUPGHOME="$work/gnupg"
cleanup() {
    gpgconf --kill all >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -m 700 "$GNUPGHOME"

gpg_batch=(gpg --batch --quiet --no-tty --pinentry-mode loopback)
passphrase_args=()
if [[ -n ${SIGNING_KEY_PASSPHRASE:-} ]]; then
    printf '%s' "$SIGNING_KEY_PASSPHRASE" >"$work/passphrase"
    gpg_batch+=(--passphrase-file "$work/passphrase")
    passphrase_args=(--passphrase-file "$work/passphrase")
fi

"${gpg_batch[@]}" --import <<<"$SIGNING_KEY"
# The first secret key's fingerprint and user ID (Helm picks the signing key by user ID).
read -r fingerprint uid < <(
    gpg --batch --with-colons --list-secret-keys |
        awk -F: '$1 == "fpr" && !fpr { fpr = $10 } $1 == "uid" && !uid { uid = $10 } END { print fpr, uid }'
)
[[ -n $fingerprint && -n $uid ]] || { echo "package-helm-plugin: SIGNING_KEY holds no secret key with a user ID" >&2; exit 1; }
"${gpg_batch[@]}" --export-secret-keys "$fingerprint" >"$work/secring.gpg"
gpg --batch --export "$fingerprint" >"$work/pubring.gpg"

name=$(sed -n 's/^name: *//p' "$root/helm-plugin/plugin.yaml")
version=$(sed -n 's/^version: *//p' "$root/helm-plugin/plugin.yaml")
tarball="$dest/$name-$version.tgz"
rm -f "$tarball" "$tarball.prov"

"$helm" plugin package "$root/helm-plugin" --sign --key "$uid" --keyring "$work/secring.gpg" \
    "${passphrase_args[@]}" --destination "$dest"
[[ -f $tarball && -f $tarball.prov ]] || { echo "package-helm-plugin: helm wrote no $tarball(.prov)" >&2; exit 1; }
"$helm" plugin verify "$tarball" --keyring "$work/pubring.gpg"
gpg --batch --armor --export "$fingerprint" >"$dest/$name-signing-key.asc"
