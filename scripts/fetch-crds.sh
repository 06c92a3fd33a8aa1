#!/usr/bin/env bash
# Fetch the CustomResourceDefinitions of the third-party projects whose kinds
# rendered repos use, from those projects' own Go modules, into $CACHE/crds/ ($CACHE as in
# scripts/build-tools.sh: outside the clone, per user). Tests install them into the real kube-apiserver, and
# `btp-gitops validate --crds $CACHE/crds/current` reads them.
#
#   scripts/fetch-crds.sh                  # every family that is missing
#   scripts/fetch-crds.sh istio flux       # only these families
#
# Layout:
#   $CACHE/crds/<family>-<version>/<file>.yaml   version-keyed copy of the CRD files
#   $CACHE/crds/<family>-<version>/.pins         the module@version, checksum and files it holds
#   $CACHE/crds/current/<family>/                a copy of the pinned version (stable path)
#   $CACHE/go/mod                                GOMODCACHE, shared with scripts/build-tools.sh
#
# Nothing of these projects is committed here: each family is pinned by module
# version and the h1: checksum Go records for the module zip (the same hash go.sum
# and the checksum database hold). `go mod download` verifies a first download
# against the checksum database; this script then refuses any module whose
# checksum differs from the pin. Only files named in SOURCES are copied out.
# A family whose pins did not change is not fetched again; a cached run takes
# well under a second. A family that cannot be fetched is reported (command and
# error) and the others are still fetched; the exit status is then non-zero.
#
# Only the Go toolchain (GOTOOLCHAIN=local) and a Go module proxy are needed.
set -euo pipefail

# --- pinned sources ----------------------------------------------------------
# One entry per module: "<family> <module>@<version> <h1 checksum> <file>...",
# files given by their path inside the module. A family may draw on several
# modules; its <version> in the cache path joins their distinct versions by '_'.
# All files are plain YAML (no Helm templates); where a project also ships its
# CRDs as chart templates, the plain controller-gen output is used instead.
# Argo CD v3.6 and Flux controllers v1.10 need go 1.27, hence the older pins.
SOURCES=(
    "cert-manager github.com/cert-manager/cert-manager@v1.21.2
        h1:UWgoYM+KLNtRlqmoWOKjKBOBUPVHeepQ6/ac3ERJW68=
        deploy/crds/cert-manager.io_certificates.yaml
        deploy/crds/cert-manager.io_certificaterequests.yaml
        deploy/crds/cert-manager.io_issuers.yaml
        deploy/crds/cert-manager.io_clusterissuers.yaml"
    # istio.io/istio publishes no semver module versions; istio.io/api holds the
    # generated CRDs that Istio's base chart ships as crd-all.gen.yaml.
    "istio istio.io/api@v1.31.1
        h1:5Yb5ihcz4YQsCkciusK7DnFpBMwRB6EFWeUKH1Atuyk=
        kubernetes/customresourcedefinitions.gen.yaml"
    # charts/cert-management/templates/*.yaml are Helm templates of the same CRDs.
    "gardener-cert github.com/gardener/cert-management@v0.27.0
        h1:RyO5tV1r8yXOBEIjRVWLvsNfYaqjxqB6jzbbp8qtU2U=
        pkg/certman2/apis/cert/crd-cert.gardener.cloud_certificates.yaml
        pkg/certman2/apis/cert/crd-cert.gardener.cloud_issuers.yaml"
    "gardener-dns github.com/gardener/external-dns-management@v0.40.0
        h1:2pgi/GD0VYWVoVDLsW7Hd9qqv0vzoHJFngrjiBQwIK8=
        pkg/apis/dns/crds/dns.gardener.cloud_dnsentries.yaml
        pkg/apis/dns/crds/dns.gardener.cloud_dnsproviders.yaml"
    "prometheus-operator github.com/prometheus-operator/prometheus-operator@v0.94.1
        h1:QEIb2wenPH+SdMN1xMf8l4Pmj00YYXXI6HlbLlQWkww=
        example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml
        example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml
        example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"
    "external-secrets github.com/external-secrets/external-secrets@v1.3.2
        h1:u2J8RjlHIeF0oZCqtl92adI/uZWUwOesJIDkfql6LqQ=
        config/crds/bases/external-secrets.io_externalsecrets.yaml
        config/crds/bases/external-secrets.io_secretstores.yaml
        config/crds/bases/external-secrets.io_clustersecretstores.yaml"
    "argo-cd github.com/argoproj/argo-cd/v3@v3.5.7
        h1:Xm1BF+I5OgDKUG3SDK49vn2/Y5AMyaNVko+/JT08gj0=
        manifests/crds/application-crd.yaml
        manifests/crds/applicationset-crd.yaml
        manifests/crds/appproject-crd.yaml"
    "flux github.com/fluxcd/kustomize-controller@v1.9.6
        h1:XB+G3A0mky0j5uVHZWv4oSlS2RvZBoNIUhstIvY0JKE=
        config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml"
    "flux github.com/fluxcd/source-controller@v1.9.6
        h1:nG534/bI6nVpyHra7ONAk6xDB3xPsVT+EOLHZHXPrrc=
        config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml
        config/crd/bases/source.toolkit.fluxcd.io_ocirepositories.yaml"
)

ALL_FAMILIES=(cert-manager istio gardener-cert gardener-dns prometheus-operator external-secrets argo-cd flux)

# --- paths -------------------------------------------------------------------
SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
# Per-user, outside the clone, so a second clone and CI on the same machine reuse the builds.
CACHE_DIR=${BTP_GITOPS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/btp-gitops}
mkdir -p "$CACHE_DIR"
CRDS_DIR=$CACHE_DIR/crds
CURRENT_DIR=$CRDS_DIR/current

# --- Go environment: the same as scripts/build-tools.sh ----------------------
export GOPATH=$CACHE_DIR/go
export GOMODCACHE=$CACHE_DIR/go/mod
export GOCACHE=$CACHE_DIR/go/build
export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false
export GOWORK=off

usage() {
    echo "usage: $0 [family ...]   (families: ${ALL_FAMILIES[*]})" >&2
}

die() {
    echo "fetch-crds: $*" >&2
    exit 1
}

# entry_fields ENTRY: the whitespace-separated fields of one SOURCES entry, one per line.
entry_fields() {
    local -a fields
    read -r -d '' -a fields <<<"$1" || true
    printf '%s\n' "${fields[@]}"
}

# family_pins FAMILY: the normalised SOURCES entries of FAMILY, one per line.
# This text is the cache key: a cached copy is reused only when it matches.
family_pins() {
    local entry
    for entry in "${SOURCES[@]}"; do
        local -a f
        mapfile -t f < <(entry_fields "$entry")
        [[ ${f[0]} == "$1" ]] && echo "${f[*]:1}"
    done
    return 0
}

# family_version PINS: the distinct module versions of a family, joined by '_'.
family_version() {
    awk '{ split($1, mv, "@"); if (!(mv[2] in seen)) { seen[mv[2]] = 1; out = out (out ? "_" : "") mv[2] } }
         END { print out }' <<<"$1"
}

# json_field NAME JSON: the string value of NAME in `go mod download -json` output.
json_field() {
    sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p" <<<"$2" | head -n 1
}

# fetch_module DEST MODULE@VERSION SUM FILE...: download one module through the
# Go module proxy, check its checksum against the pin and copy FILEs into DEST.
# On failure print the command and its error and return non-zero.
fetch_module() {
    local dest=$1 module_version=$2 sum=$3
    shift 3
    local -a cmd=(go mod download -json "$module_version")
    local out rc=0
    out=$(cd "$CRDS_DIR" && "${cmd[@]}" </dev/null 2>&1) || rc=$?
    local error dir got
    error=$(json_field Error "$out")
    dir=$(json_field Dir "$out")
    got=$(json_field Sum "$out")
    if ((rc != 0)) || [[ -n $error || -z $dir ]]; then
        {
            echo "fetch-crds: FAILED (exit $rc) in $CRDS_DIR:"
            printf '  %s\n' "${cmd[*]}"
            printf '  %b\n' "${error:-$out}"
        } >&2
        return 1
    fi
    if [[ $got != "$sum" ]]; then
        {
            echo "fetch-crds: checksum mismatch for $module_version:"
            echo "  pinned $sum"
            echo "  got    $got (from: ${cmd[*]})"
        } >&2
        return 1
    fi
    local file target
    for file in "$@"; do
        if [[ ! -f $dir/$file ]]; then
            echo "fetch-crds: $module_version has no $file (looked in $dir)" >&2
            return 1
        fi
        # Chart templates would not parse as YAML; only plain CRD files are pinned.
        if ! grep -q '^kind: CustomResourceDefinition' "$dir/$file" || grep -q '{{' "$dir/$file"; then
            echo "fetch-crds: $module_version $file is not a plain CustomResourceDefinition file" >&2
            return 1
        fi
        target=$dest/$(basename "$file")
        [[ ! -e $target ]] || { echo "fetch-crds: two pinned files are named $(basename "$file")" >&2; return 1; }
        # The module cache is read-only; the copy need not be.
        install -m 0644 "$dir/$file" "$target"
    done
}

# replace_dir TMP OUT: move a finished directory into place.
replace_dir() {
    rm -rf "$2"
    mv -T "$1" "$2"
}

# fetch_family FAMILY: make $CACHE/crds/<family>-<version>/ and current/<family>/
# hold the pinned files. Run it in a subshell with errexit and the cleanup trap
# (see main): the first failing step ends it after reporting why.
fetch_family() {
    local family=$1 pins version
    pins=$(family_pins "$family")
    [[ -n $pins ]] || die "no SOURCES entry for family $family"
    version=$(family_version "$pins")
    local out=$CRDS_DIR/$family-$version
    local start=$SECONDS status=cached

    if [[ ! -f $out/.pins || $(<"$out/.pins") != "$pins" ]]; then
        status=fetched
        local tmp=$out.tmp.$$
        rm -rf "$tmp"
        mkdir -p "$tmp"
        CURRENT_TMP=$tmp
        local line
        while read -r line; do
            local -a f
            read -r -a f <<<"$line"
            fetch_module "$tmp" "${f[@]}"
        done <<<"$pins"
        printf '%s\n' "$pins" >"$tmp/.pins"
        replace_dir "$tmp" "$out"
        CURRENT_TMP=
    fi

    # A real directory rather than a symlink: directory walkers that do not
    # follow links (Path.rglob before Python 3.13, os.walk) still see the files.
    local current=$CURRENT_DIR/$family
    if [[ ! -f $current/.pins || $(<"$current/.pins") != "$pins" ]]; then
        local tmp=$current.tmp.$$
        rm -rf "$tmp"
        CURRENT_TMP=$tmp
        cp -R "$out" "$tmp"
        replace_dir "$tmp" "$current"
        CURRENT_TMP=
    fi
    printf '%-20s %-16s %-7s %4ds  %s\n' "$family" "$version" "$status" $((SECONDS - start)) \
        "${current#"$REPO_ROOT"/}"
}

# Half-written output of a failed or interrupted fetch is removed on exit.
CURRENT_TMP=
cleanup() {
    if [[ -n $CURRENT_TMP ]]; then rm -rf "$CURRENT_TMP"; fi
}
trap cleanup EXIT

main() {
    local -a families=()
    local arg f ok
    for arg in "$@"; do
        case $arg in
            -h | --help) usage; exit 0 ;;
        esac
        ok=
        for f in "${ALL_FAMILIES[@]}"; do [[ $arg == "$f" ]] && ok=1; done
        [[ -n $ok ]] || { usage; die "unknown family: $arg"; }
        families+=("$arg")
    done
    ((${#families[@]})) || families=("${ALL_FAMILIES[@]}")

    command -v go >/dev/null || die "go is not on PATH"
    mkdir -p "$CRDS_DIR" "$CURRENT_DIR" "$GOMODCACHE"

    # Serialise concurrent invocations (e.g. parallel CI jobs on one checkout).
    if command -v flock >/dev/null; then
        exec 9>"$CRDS_DIR/.lock"
        flock 9
    fi

    local -a failed=()
    local rc
    for f in "${families[@]}"; do
        # A subshell per family, outside any `||`: there errexit stays in force
        # (bash ignores it inside a function called as `f || ...`), so a failure
        # ends only this family and its half-written directory is removed.
        set +e
        (
            trap cleanup EXIT
            set -e
            fetch_family "$f"
        )
        rc=$?
        set -e
        ((rc == 0)) || failed+=("$f")
    done
    if ((${#failed[@]})); then
        die "could not fetch: ${failed[*]} (see the errors above)"
    fi
}

main "$@"
