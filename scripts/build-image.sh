#!/usr/bin/env bash
# Build the btp-gitops OCI image from Debian packages and our wheel, without Docker or a registry.
#
#   bash scripts/build-image.sh [--no-cache] [--out DIR]
#
# The root filesystem is Debian bookworm (mmdebstrap, `essential` variant plus python3, git and
# ca-certificates) with btp-gitops and its dependencies in a venv at /opt/btp-gitops, and a
# non-root user btp-gitops (65532:65532). umoci turns it into a one-layer OCI image. What nothing
# in the image runs is left out or purged, and the standard library and pure-Python packages are
# imported from zip archives (slim_rootfs): at most 250 MB unpacked (tests/image/test_size.py).
#
# Reproducible: with the same SOURCE_DATE_EPOCH (default: the last commit's time), the same
# checkout and the same Debian and PyPI inputs, two builds give the same bytes, so the same
# manifest digest. mmdebstrap writes a reproducible tarball (fixed mtimes, sorted entries, no
# machine-id, logs or apt caches); pip runs offline from a wheelhouse, byte-code is compiled as
# checked-hash .pyc files (no timestamps); umoci's layer compression and JSON are deterministic.
#
# Cached: the layout is kept under ${XDG_CACHE_HOME:-~/.cache}/btp-gitops/image/<key>/, where
# <key> hashes every input: this script, SOURCE_DATE_EPOCH, the revision, the wheelhouse (our
# wheel and every dependency wheel, after constraints.txt if present), the Debian mirrors and
# the hashes of their package indexes (from each suite's InRelease). --no-cache builds afresh
# and leaves the cache alone (the reproducibility test compares such a build with the cached one).
#
# Output in DIR (default dist/image): btp-gitops-<version>.oci/ (OCI layout, tag <version>),
# btp-gitops-<version>.oci.tar (the same as an OCI archive), packages.txt (Debian packages in
# the image) and image.env (version, digest, paths), whose lines are also printed on stdout.
# Progress goes to stderr.
#
# Needs (checked at the start, docs/image.md): mmdebstrap, umoci, curl, git, tar and the Debian
# archive keyring (scripts/setup.sh --with-tools installs them); Python 3.11+ with pip (the
# checkout's .venv, else python3 from PATH: a fresh clone needs no .venv); 2 GB free in the cache;
# root (or passwordless sudo) for mmdebstrap's root mode, otherwise mmdebstrap tries unshare mode.
set -euo pipefail
# File modes in the image must not depend on the caller's umask (pip and cp follow it).
umask 022
caller_dir=$PWD
cd "$(dirname "$0")/.."
repo=$PWD
script_path=$repo/scripts/build-image.sh

# Pinned inputs. pip only runs during the build (from its wheel); it is not left in the image.
suite=bookworm
pip_version=26.3
image_user=btp-gitops
image_uid=65532
venv=/opt/btp-gitops
debian_packages=python3,git,ca-certificates
source_url=https://github.com/btp-gitops/btp-gitops
build_timeout=${BTP_GITOPS_IMAGE_TIMEOUT:-1800}

log() { printf 'build-image: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The Python that builds our wheel and downloads the dependencies: the checkout's .venv when
# there is one (scripts/setup.sh), else python3 from PATH (3.11 or newer, with pip).
python=
if [ -x .venv/bin/python ]; then python=$PWD/.venv/bin/python
elif command -v python3 >/dev/null; then python=$(command -v python3); fi

# Root for mmdebstrap's root mode; sudo when we are not root but may use it without a password.
as_root=()
if [ "$(id -u)" -ne 0 ] && sudo -n true 2>/dev/null; then
  as_root=(sudo -n --preserve-env=SOURCE_DATE_EPOCH)
fi

# --- Inputs ----------------------------------------------------------------------------------
source_date_epoch() {
  if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
    printf '%s\n' "$SOURCE_DATE_EPOCH"
  else
    git -C "$repo" log -1 --format=%ct
  fi
}

# The apt sources: deb.debian.org by default; a snapshot.debian.org timestamp pins them for good.
debian_sources() {
  if [ -n "${DEBIAN_SNAPSHOT:-}" ]; then
    printf '%s\n' \
      "deb http://snapshot.debian.org/archive/debian/$DEBIAN_SNAPSHOT $suite main" \
      "deb http://snapshot.debian.org/archive/debian/$DEBIAN_SNAPSHOT $suite-updates main" \
      "deb http://snapshot.debian.org/archive/debian-security/$DEBIAN_SNAPSHOT $suite-security main"
  else
    local mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
    local security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
    printf '%s\n' "deb $mirror $suite main" "deb $mirror $suite-updates main" \
      "deb $security $suite-security main"
  fi
}

# What apt would install is fixed by the suites' package indexes: their hashes, as listed in
# each suite's InRelease, stand for the Debian package list in the cache key.
debian_index_hashes() {
  local line url dist
  while IFS= read -r line; do
    read -r _ url dist _ <<<"$line"
    curl -fsSL --max-time 60 --retry 3 "$url/dists/$dist/InRelease" |
      awk -v dist="$dist" '/^SHA256:/ {s=1; next} /^[^ ]/ {s=0}
        s && $3 == "main/binary-amd64/Packages.xz" {print dist, $1}'
  done < <(debian_sources)
}

# Our wheel, built from the checkout with SOURCE_DATE_EPOCH (setuptools then writes fixed zip
# timestamps), and every dependency wheel pip resolves for it, plus pip itself for the install.
build_wheelhouse() {
  local wheelhouse=$1 extra="" constraints=()
  # From a copy of the files Git sees (tracked, or new and not ignored): a stale build/ directory
  # of the checkout (the editable install's tree too) could otherwise slip old files into the wheel.
  local source=$wheelhouse.source
  mkdir -p "$source"
  git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C "$source"
  # setuptools' warnings are noise here; the log is shown when the build fails.
  "$python" -m pip wheel --quiet --no-deps --wheel-dir "$wheelhouse/self" "$source" >"$wheelhouse.log" 2>&1 ||
    { cat "$wheelhouse.log" >&2; die "building the wheel failed"; }
  local wheel
  wheel=$(ls "$wheelhouse"/self/btp_gitops-*.whl)
  # The controller's dependencies may live in an extra; install it when pyproject.toml has one.
  if "$python" - <<'EOF'
import sys, tomllib
extras = tomllib.load(open("pyproject.toml", "rb"))["project"].get("optional-dependencies", {})
sys.exit(0 if "controller" in extras else 1)
EOF
  then extra="[controller]"; fi
  [ -f constraints.txt ] && constraints=(-c constraints.txt)
  local download=("$python" -m pip download --quiet --disable-pip-version-check --timeout 60
    --retries 3 --only-binary=:all: --dest "$wheelhouse")
  "${download[@]}" "${constraints[@]}" "$wheel$extra" >&2
  # pip on its own: the constraints pin the checkout's pip, which may not be this one.
  "${download[@]}" --no-deps "pip==$pip_version" >&2
  mv "$wheel" "$wheelhouse/" && rmdir "$wheelhouse/self"
  printf '%s\n' "btp-gitops$extra" >"$wheelhouse/requirement.txt"
}

# --- The root filesystem ---------------------------------------------------------------------
# Runs inside mmdebstrap as its customize hook: $1 is the root filesystem, before it is packed.
customize_rootfs() {
  local root=$1 wheelhouse=$2 packages_out=$3
  clean_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
    PYTHONDONTWRITEBYTECODE=1 SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH")
  cp -r "$wheelhouse" "$root/tmp/wheelhouse"
  chroot "$root" "${clean_env[@]}" /usr/bin/python3 -m venv --without-pip "$venv"
  # pip from its wheel, offline, without byte-code (compiled below, reproducibly) and without cache.
  chroot "$root" "${clean_env[@]}" "$venv/bin/python" /tmp/wheelhouse/pip-"$pip_version"-py3-none-any.whl/pip \
    install --quiet --no-index --find-links /tmp/wheelhouse --no-compile --no-cache-dir \
    --disable-pip-version-check --no-warn-script-location "$(cat "$wheelhouse/requirement.txt")"
  rm -rf "$root/tmp/wheelhouse"
  slim_rootfs "$root"
  # Checked-hash .pyc files hold a hash of the source, not its mtime: reproducible, and still
  # valid once the tarball's fixed mtimes replace the files' own (a read-only root filesystem
  # could not rewrite stale ones). -f replaces Debian's timestamp .pyc files in the standard library.
  # (The modules moved into zip archives by slim_rootfs have theirs in the archive.)
  chroot "$root" "${clean_env[@]}" "$venv/bin/python" -m compileall -q -f -j 1 \
    --invalidation-mode checked-hash /usr/lib/python3.11 /usr/lib/python3/dist-packages "$venv/lib"
  link_duplicates "$root"
  # The non-root user the image runs as, with a home directory (Git and Helm write config there).
  printf '%s:x:%s:%s:btp-gitops:/home/%s:/usr/sbin/nologin\n' \
    "$image_user" "$image_uid" "$image_uid" "$image_user" >>"$root/etc/passwd"
  printf '%s:x:%s:\n' "$image_user" "$image_uid" >>"$root/etc/group"
  printf '%s:!::0:99999:7:::\n' "$image_user" >>"$root/etc/shadow"
  install -d -m 0755 -o "$image_uid" -g "$image_uid" "$root/home/$image_user"
  # shellcheck disable=SC2016  # dpkg-query's format, not shell expansions
  chroot "$root" dpkg-query -W -f '${Package}\t${Version}\n' >"$packages_out"
}

# What the image needs at run time is btp-gitops (render, post-render, the controller and the
# subscription server), Python, Git over HTTPS and the shell tools the Argo CD plugin's commands
# use (sh, find, grep, head, dirname). What only installing Debian packages needs, or nothing of
# ours ever runs, goes; each line says why it is safe. See docs/image.md for the sizes.
slim_rootfs() {
  local root=$1
  local site=$venv/lib/python3.11/site-packages
  # Perl: git depends on it for git-svn, send-email and other Perl commands btp-gitops never runs;
  # perl-base, debconf, login and util-linux are Essential for installing and administering a
  # system, which nobody does in this image (it has no apt). dpkg's database stays, without them,
  # so packages.txt and image scanners see what is really installed.
  chroot "$root" "${clean_env[@]}" dpkg --purge --force-depends --force-remove-essential \
    perl perl-modules-5.36 libperl5.36 liberror-perl libfile-find-rule-perl libnumber-compare-perl \
    libtext-glob-perl libgdbm-compat4 libgdbm6 git-man util-linux-extra util-linux login debconf \
    perl-base >"$root/tmp/purge.log" 2>&1 || { cat "$root/tmp/purge.log" >&2; die "dpkg --purge failed"; }
  rm -f "$root/tmp/purge.log"
  rm -f "$root"/var/lib/dpkg/*-old "$root"/var/cache/debconf/*-old
  # kubernetes' asyncio client (kubernetes.aio, 68 MB) is not imported by btp-gitops, nor by the
  # synchronous client it uses; btp-gitops validates against the strict schemas only
  # (generator/io/kube_schemas.py), so kubernetes-validate's non-strict copies go.
  rm -rf "$root$site/kubernetes/aio" "$root$site"/kubernetes_validate/kubernetes-json-schema/*-local
  # Test suites shipped inside wheels.
  find "$root$site" -mindepth 2 -type d \( -name tests -o -name test \) -prune -exec rm -rf {} +
  find "$root$site/kubernetes" -name '*_test.py' -delete
  # Pure-Python packages and the standard library into zip archives Python imports from (see
  # scripts/image-zip-modules.py, which refuses a package with native code). Only packages that
  # read their own files through importlib.resources or pkgutil, or not at all: not btp_gitops
  # (bundled.module_resources_dir() hands out a directory), certifi (its CA file is a path),
  # cffi, or helm_python (ctypes loads the Helm library by its path).
  local zipped_packages=(
    kubernetes kubernetes_validate pydantic typing_inspection annotated_types typing_extensions.py
    oauthlib requests_oauthlib requests urllib3 idna websocket durationpy dateutil tzdata
    git gitdb smmap packaging jsonschema jsonschema_specifications referencing semver jwt
    prometheus_client importlib_resources attr attrs aiohappyeyeballs aiosignal aiohttp_retry pycparser
  )
  cp "$repo/scripts/image-zip-modules.py" "$root/tmp/image-zip-modules.py"
  chroot "$root" "${clean_env[@]}" /usr/bin/python3 /tmp/image-zip-modules.py \
    "$venv/lib/python3.11/site-packages.zip" "$site" "${zipped_packages[@]}"
  printf '%s\n' "$venv/lib/python3.11/site-packages.zip" >"$root$site/btp-gitops-zipped-packages.pth"
  # The standard library: Python looks in /usr/lib/python311.zip before /usr/lib/python3.11.
  # Its test package and pydoc's topics (help() in a REPL) are not needed by anything.
  rm -rf "$root/usr/lib/python3.11/test" "$root/usr/lib/python3.11/pydoc_data"
  # os.py stays (Python finds its prefix by it), as do lib-dynload (extension modules cannot be
  # imported from a zip), venv (it copies its scripts as files) and sitecustomize.py (a link to
  # /etc/python3.11, which the administrator owns); a link within the directory goes in as a copy.
  local stdlib=() entry
  for entry in "$root"/usr/lib/python3.11/*; do
    case ${entry##*/} in
      os.py | lib-dynload | venv | __pycache__ | EXTERNALLY-MANAGED | LICENSE.txt) ;;
      *) [[ $(readlink "$entry") == /* ]] || stdlib+=("${entry##*/}") ;;
    esac
  done
  chroot "$root" "${clean_env[@]}" /usr/bin/python3 /tmp/image-zip-modules.py \
    /usr/lib/python311.zip /usr/lib/python3.11 "${stdlib[@]}"
  chroot "$root" "${clean_env[@]}" /usr/bin/python3 /tmp/image-zip-modules.py --prune-records "$site"
  rm -f "$root/tmp/image-zip-modules.py"
}

# Equal files stored once: wheels cannot hold symlinks, so helm-python-sdk ships its 85 MB
# library three times (libhelm_c.so, .so.0, .so.0.2.2), and Debian installs git twice (/usr/bin
# and /usr/lib/git-core). Hard links store each once in the layer. Only files with the same
# mode and owner are linked (they share one inode); sorted paths, so the first of each set of
# equal files is always the one kept.
link_duplicates() {
  local dir=$1 key path
  declare -A first=()
  while IFS= read -r -d '' path; do
    key="$(stat -c '%a:%u:%g' "$path"):$(sha256sum <"$path" | cut -d' ' -f1)"
    if [ -n "${first[$key]:-}" ]; then
      ln -f "${first[$key]}" "$path"
    else
      first[$key]=$path
    fi
  done < <(find "$dir" -xdev -type f -size +16k -print0 | LC_ALL=C sort -z)
}

run_mmdebstrap() {
  local wheelhouse=$1 rootfs_tar=$2 packages_out=$3
  local sources=()
  mapfile -t sources < <(debian_sources)
  # Documentation, man pages and translations are left out (copyright files stay). So are glibc's
  # iconv modules (8 MB: Python has its own codecs, Git's repositories here are UTF-8), and the
  # parts of Git that serve repositories or mail patches, or are Perl scripts (Perl is not in the
  # image): Git keeps cloning, fetching and pushing over HTTPS. (Python's own files cannot be left
  # out this way: its postinst compiles every file dpkg lists; see slim_rootfs.)
  local git_excludes=() command
  for command in git-daemon git-http-backend git-http-push git-imap-send git-shell scalar \
    git-instaweb git-add--interactive git-archimport git-cvsexportcommit git-cvsimport git-cvsserver \
    git-send-email git-svn; do
    git_excludes+=("--dpkgopt=path-exclude=/usr/lib/git-core/$command")
  done
  git_excludes+=(--dpkgopt=path-exclude=/usr/bin/git-shell --dpkgopt=path-exclude=/usr/bin/scalar)
  timeout "$build_timeout" "${as_root[@]}" env SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" \
    mmdebstrap --quiet --variant=essential --format=tar --architectures=amd64 \
    --include="$debian_packages" \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/lib/x86_64-linux-gnu/gconv/*' \
    --dpkgopt='path-exclude=/usr/share/gitweb/*' \
    "${git_excludes[@]}" \
    --customize-hook="bash '$script_path' --customize \"\$1\" '$wheelhouse' '$packages_out'" \
    "$suite" "$rootfs_tar" "${sources[@]}"
}

# --- The OCI image ---------------------------------------------------------------------------
make_layout() {
  local rootfs_tar=$1 layout=$2 version=$3 revision=$4 created=$5
  local description
  description=$("$python" -c \
    'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["description"])')
  umoci init --layout "$layout"
  umoci new --image "$layout:$version"
  umoci raw add-layer --image "$layout:$version" --history.created "$created" \
    --history.created_by "scripts/build-image.sh: Debian $suite ($debian_packages), btp-gitops $version" \
    "$rootfs_tar"
  local annotations=(
    "org.opencontainers.image.source=$source_url"
    "org.opencontainers.image.version=$version"
    "org.opencontainers.image.revision=$revision"
    "org.opencontainers.image.created=$created"
    "org.opencontainers.image.licenses=Apache-2.0"
    "org.opencontainers.image.title=btp-gitops"
    "org.opencontainers.image.description=$description"
  )
  local flags=() a
  for a in "${annotations[@]}"; do flags+=(--config.label "$a" --manifest.annotation "$a"); done
  umoci config --image "$layout:$version" --no-history --created "$created" \
    --os linux --architecture amd64 --author "btp-gitops" \
    --config.user "$image_uid:$image_uid" \
    --config.entrypoint "$venv/bin/btp-gitops" --config.cmd --help \
    --config.workingdir "/home/$image_user" \
    --config.env "PATH=$venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --config.env LANG=C.UTF-8 --config.env PYTHONUNBUFFERED=1 \
    "${flags[@]}"
  umoci gc --layout "$layout"
  # umoci writes blobs 0600; readable blobs, and fixed modes in the archive whatever the umask.
  chmod -R u=rwX,go=rX "$layout"
}

# An OCI archive is the layout in a tarball; fixed order, owners and mtimes keep it reproducible.
make_archive() {
  local layout=$1 archive=$2
  tar --sort=name --format=posix --numeric-owner --owner=0 --group=0 \
    --mtime="@$SOURCE_DATE_EPOCH" \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -cf "$archive.tmp" -C "$layout" oci-layout index.json blobs
  mv "$archive.tmp" "$archive"
}

manifest_digest() {
  "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' \
    "$1/index.json"
}

# --- Main ------------------------------------------------------------------------------------
# Everything the build needs, checked before it starts (docs/image.md lists it too).
check_prerequisites() {
  local missing=() tool
  for tool in mmdebstrap:mmdebstrap umoci:umoci curl:curl git:git tar:tar chroot:coreutils \
    sha256sum:coreutils; do
    command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
  done
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
  if [ -z "$python" ]; then
    missing+=(python3 python3-pip)
  elif ! "$python" -m pip --version >/dev/null 2>&1; then
    missing+=(python3-pip)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    local packages
    packages=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
    die "missing ${packages% }: apt-get install ${packages% } (Debian or Ubuntu; bash scripts/setup.sh --with-tools installs them)"
  fi
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    die "needs Python 3.11 or newer (tomllib); $python is $("$python" -V 2>&1)"
  git -C "$repo" rev-parse HEAD >/dev/null 2>&1 || die "not a Git checkout: $repo (the image records its revision)"
  if [ "$(id -u)" -ne 0 ] && [ ${#as_root[@]} -eq 0 ]; then
    log "not root and no passwordless sudo: mmdebstrap will try its unshare mode (needs unprivileged user namespaces)"
  fi
  local free
  free=$(df -Pk "$cache_root" | awk 'NR == 2 {print $4}')
  [ "$free" -ge $((2 * 1024 * 1024)) ] ||
    die "needs 2 GB free under $cache_root (build files and the cache), has $((free / 1024)) MB"
}

main() {
  cache_root=${BTP_GITOPS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/btp-gitops}/image
  mkdir -p "$cache_root"
  check_prerequisites
  SOURCE_DATE_EPOCH=$(source_date_epoch)
  export SOURCE_DATE_EPOCH
  local version revision created
  revision=$(git -C "$repo" rev-parse HEAD)
  created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

  local work
  work=$(mktemp -d "$cache_root/.build.XXXXXX")
  # Build files may belong to root (sudo); remove them the same way.
  # shellcheck disable=SC2064  # expand $work now: it is local to main
  trap "${as_root[*]} rm -rf '$work'" EXIT

  log "wheelhouse (our wheel and its dependencies)"
  build_wheelhouse "$work/wheelhouse"
  version=$(basename "$(ls "$work"/wheelhouse/btp_gitops-*.whl)" | cut -d- -f2)
  log "Debian package indexes"
  local indexes key
  indexes=$(debian_index_hashes)
  [ "$(wc -l <<<"$indexes")" -eq 3 ] || die "expected the hashes of 3 package indexes, got: $indexes"
  key=$(
    {
      sha256sum "$script_path" | cut -d' ' -f1
      printf '%s\n' "$SOURCE_DATE_EPOCH" "$revision" "$version" "$indexes"
      debian_sources
      (cd "$work/wheelhouse" && sha256sum -- *.whl requirement.txt)
    } | sha256sum | cut -c1-32
  )
  local entry=$cache_root/$key
  local layout_name=btp-gitops-$version.oci

  if $use_cache && [ -f "$entry/done" ]; then
    log "cached: $entry"
  else
    log "root filesystem (mmdebstrap, Debian $suite)"
    run_mmdebstrap "$work/wheelhouse" "$work/rootfs.tar" "$work/packages.txt"
    log "OCI layout (umoci)"
    make_layout "$work/rootfs.tar" "$work/result/$layout_name" "$version" "$revision" "$created"
    cp "$work/packages.txt" "$work/result/packages.txt"
    if $use_cache; then
      rm -rf "$entry"
      mv "$work/result" "$entry"
      touch "$entry/done"
      # Keep the three newest entries: every commit (revision, time) makes a new one.
      find "$cache_root" -mindepth 1 -maxdepth 1 -type d ! -name '.*' -printf '%T@ %p\n' |
        sort -rn | tail -n +4 | cut -d' ' -f2- | xargs -r rm -rf
    else
      entry=$work/result
    fi
  fi

  rm -rf "${out_dir:?}/$layout_name"
  cp -r "$entry/$layout_name" "$out_dir/$layout_name"
  cp "$entry/packages.txt" "$out_dir/packages.txt"
  make_archive "$out_dir/$layout_name" "$out_dir/$layout_name.tar"
  local digest
  digest=$(manifest_digest "$out_dir/$layout_name")
  {
    printf 'version=%s\n' "$version"
    printf 'digest=%s\n' "$digest"
    printf 'layout=%s\n' "$out_dir/$layout_name"
    printf 'archive=%s\n' "$out_dir/$layout_name.tar"
    printf 'tag=%s\n' "$version"
    printf 'cache_key=%s\n' "$key"
  } | tee "$out_dir/image.env"
}

# --- Arguments -------------------------------------------------------------------------------
use_cache=true
out_dir=$repo/dist/image
parse_args() {
  while [ $# -gt 0 ]; do
    case $1 in
      --no-cache) use_cache=false ;;
      --out) [ $# -ge 2 ] || die "--out needs a directory"; out_dir=$2; shift ;;  # relative: to the caller's directory
      --customize) shift; customize_rootfs "$@"; exit 0 ;;  # mmdebstrap's hook: see run_mmdebstrap
      -h|--help) sed -n '2,32p' "$script_path"; exit 0 ;;
      *) die "unknown argument: $1" ;;
    esac
    shift
  done
}

# One line: bash has read all of it before main runs, so editing this file during a build
# cannot make bash read a shifted tail afterwards.
parse_args "$@"; cd "$caller_dir" && mkdir -p "$out_dir" && out_dir=$(cd "$out_dir" && pwd) && cd "$repo" && main; exit
