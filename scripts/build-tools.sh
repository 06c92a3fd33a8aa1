#!/usr/bin/env bash
# Build the Kubernetes tooling used by the test suite from Go modules and cache
# it under $CACHE/tools/, where $CACHE is $BTP_GITOPS_CACHE_DIR, else
# ${XDG_CACHE_HOME:-~/.cache}/btp-gitops: per user, shared by every clone.
#
#   scripts/build-tools.sh                 # build every tool the tests use that is missing
#   scripts/build-tools.sh helm3 kustomize # build only these tools
#   scripts/build-tools.sh yq              # a benchmark's peer: only built when named
#
# Layout:
#   $CACHE/tools/<tool>-<version>/<binary>   version-keyed build output
#   $CACHE/tools/bin/<tool>                  symlink to the current version
#   $CACHE/tools/logs/<tool>-<version>.log   output of the last build
#   $CACHE/go/{mod,build}                    GOMODCACHE / GOCACHE
#
# A tool whose version-keyed binary already exists is not rebuilt, so changing
# one *_VERSION below rebuilds only that tool. kube-apiserver, etcd and Flux's
# source-controller and kustomize-controller are built through small wrapper
# modules (tests/tools/<tool>/) because their upstream modules use replace
# directives, which `go install module@version` refuses.
# When KUBE_VERSION / ETCD_VERSION no longer match the wrapper's go.mod, the
# go.mod/go.sum are regenerated here; commit the result.
#
# Only the Go toolchain (GOTOOLCHAIN=local) and a Go module proxy are needed.
set -euo pipefail

# --- pinned versions ---------------------------------------------------------
KUBE_VERSION=v1.37.1      # k8s.io/kubernetes (kube-apiserver); staging modules v0.37.1
ETCD_VERSION=v3.6.16      # go.etcd.io/etcd/server/v3
HELM3_VERSION=v3.22.0     # helm.sh/helm/v3
HELM4_VERSION=v4.3.1      # helm.sh/helm/v4
KUSTOMIZE_VERSION=v5.8.2  # sigs.k8s.io/kustomize/kustomize/v5 (v5.8.3 needs go 1.27)
ACTIONLINT_VERSION=v1.7.12 # github.com/rhysd/actionlint (lints .github/workflows and action.yml)
# Flux's controllers, at the version of the Flux CRDs scripts/fetch-crds.sh pins (v1.10 needs go 1.27).
SOURCE_CONTROLLER_VERSION=v1.9.6    # github.com/fluxcd/source-controller
KUSTOMIZE_CONTROLLER_VERSION=v1.9.6 # github.com/fluxcd/kustomize-controller
SOURCE_CONTROLLER_ARTIFACT_VERSION=v0.18.0 # github.com/fluxcd/pkg/artifact (see sync_wrapper)
YQ_VERSION=v4.54.3        # github.com/mikefarah/yq/v4 (bench/startup.py's BTP Manager script peer)

ALL_TOOLS=(kube-apiserver etcd helm3 helm4 kustomize actionlint source-controller kustomize-controller)
# Built only when named (a benchmark asks for them); no test needs them.
ON_DEMAND_TOOLS=(yq)

# --- paths -------------------------------------------------------------------
SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
# Per-user, outside the clone, so a second clone and CI on the same machine reuse the builds.
CACHE_DIR=${BTP_GITOPS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/btp-gitops}
mkdir -p "$CACHE_DIR"
TOOLS_DIR=$CACHE_DIR/tools
BIN_DIR=$TOOLS_DIR/bin
LOG_DIR=$TOOLS_DIR/logs
WRAPPERS_DIR=$REPO_ROOT/tests/tools

# --- Go environment: everything stays inside $CACHE/ ---------------------------
export GOPATH=$CACHE_DIR/go
export GOMODCACHE=$CACHE_DIR/go/mod
export GOCACHE=$CACHE_DIR/go/build
export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false
export CGO_ENABLED=0
export GOWORK=off

# Parallel package builds: one per core, capped so linking the large binaries
# (kube-apiserver, etcd) does not exhaust memory on small machines.
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
BUILD_JOBS=${BUILD_JOBS:-$(( ncpu < 4 ? ncpu : 4 ))}
export GOMAXPROCS=${GOMAXPROCS:-$BUILD_JOBS}

usage() {
    echo "usage: $0 [tool ...]   (tools: ${ALL_TOOLS[*]}; when named: ${ON_DEMAND_TOOLS[*]})" >&2
}

die() {
    echo "build-tools: $*" >&2
    exit 1
}

# run LOGFILE CMD...: run CMD with output to LOGFILE; on failure print the
# exact command and the tail of its output, then exit non-zero.
run() {
    local log=$1
    shift
    {
        printf '+ (cd %q &&' "$PWD"
        printf ' %q' "$@"
        printf ')\n'
    } >>"$log"
    local rc=0
    "$@" >>"$log" 2>&1 || rc=$?
    if ((rc != 0)); then
        {
            echo
            echo "build-tools: FAILED (exit $rc) in $PWD:"
            printf '  '
            printf '%q ' "$@"
            echo
            echo "---- last 40 lines of $log ----"
            tail -n 40 "$log"
        } >&2
        exit 1
    fi
}

# go_mod_file MODULE@VERSION: print the path of that module's go.mod in the
# module cache (downloading it through the proxy if needed).
go_mod_file() {
    local out
    out=$(go mod download -json "$1") || die "go mod download -json $1 failed: $out"
    sed -n 's/.*"GoMod": "\([^"]*\)".*/\1/p' <<<"$out"
}

# required_version GOMOD MODULE: version of MODULE in a go.mod require block.
required_version() {
    awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1"
}

# sync_wrapper DIR MODULE VERSION LOG: make sure the wrapper module in DIR
# requires MODULE at VERSION; regenerate go.mod/go.sum when it does not.
sync_wrapper() {
    local dir=$1 module=$2 version=$3 log=$4
    local gomod=$dir/go.mod
    if [[ -f $gomod && -f $dir/go.sum ]] &&
        [[ $(required_version "$gomod" "$module") == "$version" ]]; then
        return 0
    fi
    echo "build-tools: regenerating $gomod for $module $version (commit go.mod and go.sum)" >&2
    local upstream gover
    upstream=$(go_mod_file "$module@$version")
    [[ -n $upstream ]] || die "could not locate go.mod of $module@$version"
    gover=$(awk '$1 == "go" { print $2; exit }' "$upstream")
    {
        echo "// Generated by scripts/build-tools.sh; edit the version there, not here."
        echo "module btp-gitops/tests/tools/$(basename "$dir")"
        echo
        echo "go $gover"
        echo
        # The upstream module's godebug settings decide runtime behaviour of
        # the binary; the main module's go.mod is the only one that counts.
        grep -E '^godebug ' "$upstream" || true
        echo
        echo "require $module $version"
        if [[ $module == k8s.io/kubernetes ]]; then
            # k8s.io/kubernetes requires its staging modules as v0.0.0 and
            # replaces them with ./staging/...; map each to the published
            # v0.<minor>.<patch> release instead.
            local staging_version=v0.${version#v1.}
            echo
            echo "replace ("
            awk '/^require[[:space:]]*\(/ { inreq = 1; next }
                 inreq && /^\)/ { inreq = 0 }
                 inreq && $1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }' "$upstream" |
                sort -u | while read -r m; do
                printf '\t%s => %s %s\n' "$m" "$m" "$staging_version"
            done
            echo ")"
        fi
        if [[ $module == github.com/fluxcd/* ]]; then
            # Flux's controllers replace their own api module with ./api (published
            # under the same version) and pin a few dependencies by replace, which only
            # the main module can do: keep every replace whose target is not a local path.
            echo
            upstream_replaces "$upstream"
            if [[ $module == github.com/fluxcd/source-controller ]]; then
                # The module proxy these builds were made through (proxy.golang.org as
                # seen from the build machine) answers 403 "This module version is not
                # available" for the zip of github.com/fluxcd/pkg/artifact v0.18.3, which
                # source-controller v1.9.5/v1.9.6 require; v0.18.0 (required by v1.9.0) is
                # served, and differs from v0.18.3 only in code, not in its API.
                echo "replace github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact $SOURCE_CONTROLLER_ARTIFACT_VERSION"
            fi
        fi
    } >"$gomod"
    rm -f "$dir/go.sum"
    local -a tidy=(go mod tidy)
    # Flux's controllers' tests import test-server modules the proxy does not serve
    # either (github.com/fluxcd/pkg/helmtestserver v0.40.2); tidy records everything
    # the build needs and reports those as errors: -e keeps going. A build dependency
    # missing from go.sum still fails the -mod=readonly build below.
    [[ $module == github.com/fluxcd/* ]] && tidy+=(-e)
    (cd "$dir" && run "$log" "${tidy[@]}")
}

# upstream_replaces GOMOD: the replace directives of GOMOD that point at another
# module version (not at a directory), one `replace A => B vX` line each.
upstream_replaces() {
    awk '/^replace[[:space:]]*\(/ { inblock = 1; next }
         inblock && /^\)/ { inblock = 0; next }
         inblock && NF >= 3 && $0 !~ /=>[[:space:]]*\.\.?\// { sub(/^[[:space:]]+/, ""); print "replace " $0 }
         /^replace[[:space:]]+[^(]/ && $0 !~ /=>[[:space:]]*\.\.?\// { print }' "$1"
}

# finish_dir TMP OUT: move a finished build directory into place.
finish_dir() {
    local tmp=$1 out=$2
    rm -rf "$out"
    mv -T "$tmp" "$out"
}

# build_tool TOOL: build one tool into $CACHE/tools/<tool>-<version>/.
build_tool() {
    local tool=$1 version binary
    case $tool in
        kube-apiserver) version=$KUBE_VERSION binary=kube-apiserver ;;
        etcd) version=$ETCD_VERSION binary=etcd ;;
        helm3) version=$HELM3_VERSION binary=helm ;;
        helm4) version=$HELM4_VERSION binary=helm ;;
        kustomize) version=$KUSTOMIZE_VERSION binary=kustomize ;;
        actionlint) version=$ACTIONLINT_VERSION binary=actionlint ;;
        source-controller) version=$SOURCE_CONTROLLER_VERSION binary=source-controller ;;
        kustomize-controller) version=$KUSTOMIZE_CONTROLLER_VERSION binary=kustomize-controller ;;
        yq) version=$YQ_VERSION binary=yq ;;
        *) usage; die "unknown tool: $tool" ;;
    esac

    local out=$TOOLS_DIR/$tool-$version
    local target=$out/$binary
    local log=$LOG_DIR/$tool-$version.log
    local start=$SECONDS status

    if [[ -x $target ]]; then
        status=cached
    else
        status=built
        local tmp=$out.tmp.$$
        rm -rf "$tmp"
        mkdir -p "$tmp"
        CURRENT_TMP=$tmp
        : >"$log"
        local -a gobuild=(go build -trimpath -p "$BUILD_JOBS")
        local -a goinstall=(go install -trimpath -p "$BUILD_JOBS")
        case $tool in
            kube-apiserver)
                local w=$WRAPPERS_DIR/kube-apiserver minor
                sync_wrapper "$w" k8s.io/kubernetes "$version" "$log"
                minor=${version#v1.}
                minor=${minor%%.*}
                local ld="-s -w"
                local pkg
                for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
                    ld+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
                    ld+=" -X $pkg.gitTreeState=clean"
                done
                (cd "$w" && run "$log" "${gobuild[@]}" -mod=readonly -ldflags "$ld" \
                    -o "$tmp/$binary" k8s.io/kubernetes/cmd/kube-apiserver)
                ;;
            etcd)
                local w=$WRAPPERS_DIR/etcd
                sync_wrapper "$w" go.etcd.io/etcd/server/v3 "$version" "$log"
                (cd "$w" && run "$log" "${gobuild[@]}" -mod=readonly -ldflags "-s -w" \
                    -o "$tmp/$binary" go.etcd.io/etcd/server/v3)
                ;;
            helm3)
                # Mirror helm's Makefile: version string plus the default
                # Kubernetes version (Capabilities.KubeVersion) derived from
                # the client-go release helm was built against.
                local gomod cg minor
                gomod=$(go_mod_file "helm.sh/helm/v3@$version")
                cg=$(required_version "$gomod" k8s.io/client-go)
                [[ $cg =~ ^v0\.([0-9]+)\. ]] || die "cannot derive Kubernetes version from client-go '$cg' in $gomod"
                minor=${BASH_REMATCH[1]}
                local ld="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
                ld+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
                ld+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1"
                ld+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor"
                ld+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1"
                ld+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
                (cd "$tmp" && run "$log" env GOBIN="$tmp" "${goinstall[@]}" -ldflags "$ld" \
                    "helm.sh/helm/v3/cmd/helm@$version")
                ;;
            helm4)
                # helm v4 reads its Kubernetes version from the build info.
                local ld="-s -w -X helm.sh/helm/v4/internal/version.version=$version"
                ld+=" -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
                (cd "$tmp" && run "$log" env GOBIN="$tmp" "${goinstall[@]}" -ldflags "$ld" \
                    "helm.sh/helm/v4/cmd/helm@$version")
                ;;
            kustomize)
                (cd "$tmp" && run "$log" env GOBIN="$tmp" "${goinstall[@]}" -ldflags "-s -w" \
                    "sigs.k8s.io/kustomize/kustomize/v5@$version")
                ;;
            yq)
                # The main package is the module root; its version is a constant in the source.
                (cd "$tmp" && run "$log" env GOBIN="$tmp" "${goinstall[@]}" -ldflags "-s -w" \
                    "github.com/mikefarah/yq/v4@$version")
                ;;
            actionlint)
                # Its version string comes from the module's build info; no ldflags needed.
                (cd "$tmp" && run "$log" env GOBIN="$tmp" "${goinstall[@]}" -ldflags "-s -w" \
                    "github.com/rhysd/actionlint/cmd/actionlint@$version")
                ;;
            source-controller | kustomize-controller)
                # The main package is the module root. Its CRDs (config/crd/bases) go beside
                # the binary: a test cluster running it needs every kind it watches, more than
                # the ones scripts/fetch-crds.sh pins for validation.
                local w=$WRAPPERS_DIR/$tool module=github.com/fluxcd/$tool dir
                sync_wrapper "$w" "$module" "$version" "$log"
                (cd "$w" && run "$log" "${gobuild[@]}" -mod=readonly -ldflags "-s -w" \
                    -o "$tmp/$binary" "$module")
                dir=$(cd "$w" && go list -mod=readonly -m -f '{{.Dir}}' "$module") ||
                    die "$tool: cannot locate $module in the module cache"
                mkdir -p "$tmp/crds"
                cp "$dir"/config/crd/bases/*.yaml "$tmp/crds/"
                chmod u+w "$tmp"/crds/*.yaml
                ;;
        esac
        [[ -x $tmp/$binary ]] || die "$tool: build finished but $tmp/$binary is missing (see $log)"
        # Smoke test: the binary must at least start and print its version.
        local -a vcmd
        case $tool in
            helm3 | helm4 | kustomize) vcmd=("$tmp/$binary" version) ;;
            yq) vcmd=("$tmp/$binary" --version) ;;
            actionlint) vcmd=("$tmp/$binary" -version) ;;
            # Flux's controllers have no version flag; --help parses every flag and exits 0.
            source-controller | kustomize-controller) vcmd=("$tmp/$binary" --help) ;;
            *) vcmd=("$tmp/$binary" --version) ;;
        esac
        (cd "$tmp" && run "$log" "${vcmd[@]}")
        finish_dir "$tmp" "$out"
        CURRENT_TMP=
    fi

    mkdir -p "$BIN_DIR"
    ln -sfn "../$tool-$version/$binary" "$BIN_DIR/$tool"
    printf '%-15s %-9s %-7s %4ds  %s\n' "$tool" "$version" "$status" $((SECONDS - start)) \
        "${BIN_DIR#"$REPO_ROOT"/}/$tool"
}

# Half-built output of a failed or interrupted build is removed on exit.
CURRENT_TMP=
cleanup() {
    if [[ -n $CURRENT_TMP ]]; then rm -rf "$CURRENT_TMP"; fi
}
trap cleanup EXIT

main() {
    local -a tools=()
    local arg t ok
    for arg in "$@"; do
        case $arg in
            -h | --help) usage; exit 0 ;;
        esac
        ok=
        for t in "${ALL_TOOLS[@]}" "${ON_DEMAND_TOOLS[@]}"; do [[ $arg == "$t" ]] && ok=1; done
        [[ -n $ok ]] || { usage; die "unknown tool: $arg"; }
        tools+=("$arg")
    done
    ((${#tools[@]})) || tools=("${ALL_TOOLS[@]}")

    command -v go >/dev/null || die "go is not on PATH"
    mkdir -p "$TOOLS_DIR" "$BIN_DIR" "$LOG_DIR" "$GOMODCACHE" "$GOCACHE"

    # Serialise concurrent invocations (e.g. parallel CI jobs on one checkout).
    if command -v flock >/dev/null; then
        exec 9>"$TOOLS_DIR/.lock"
        flock 9
    fi

    echo "build-tools: $(go version), jobs=$BUILD_JOBS, cache=${CACHE_DIR#"$REPO_ROOT"/}"
    for t in "${tools[@]}"; do
        build_tool "$t"
    done
}

main "$@"
