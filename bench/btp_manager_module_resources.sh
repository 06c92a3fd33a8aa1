#!/usr/bin/env bash
# The peer of `btp-gitops module-resources` in bench/startup.py: BTP Manager's way of making its
# module-resources/ artifact (helm template, then yq over every document), written here from the
# description of its CI script (/work/shared/reference/btp-manager.md), not from its code.
#
#   bench/btp_manager_module_resources.sh HELM YQ CHART OVERRIDES TAG OUT
#
# - `helm template TAG CHART --values OVERRIDES --namespace kyma-system --output-dir`: one file per
#   template that renders something, its documents in Helm's install order, each behind Helm's
#   `# Source:` line;
# - each document is taken out of its file and asked about with yq, one question per call as BTP
#   Manager's script asks them (its kind, its name, its hook annotation): a pre-delete hook goes to
#   excluded/to-exclude.yml, every other document to apply/<template file>, with the container
#   images of a Deployment blanked (they are injected at run time);
# - delete/to-delete.yml: every document of the previous OUT/apply/ whose kind and name this
#   release no longer produces.
# OUT/apply, OUT/delete and OUT/excluded are replaced; the number of yq runs goes to stderr.
set -euo pipefail

if (($# != 6)); then
    echo "usage: $0 HELM YQ CHART OVERRIDES TAG OUT" >&2
    exit 2
fi
helm=$1 yq=$2 chart=$3 overrides=$4 tag=$5 out=$6

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=$work/yq-runs
: >"$runs"

# q ARGS...: one yq run, counted (in a file: most calls run in a command substitution's subshell).
q() {
    echo >>"$runs"
    "$yq" "$@"
}

# emit DOCUMENT FILE: append one document to FILE, behind a `---` line (yq keeps the one it read).
emit() {
    if [[ $1 == ---* ]]; then printf '%s\n' "$1" >>"$2"; else printf -- '---\n%s\n' "$1" >>"$2"; fi
}

"$helm" template "$tag" "$chart" --values "$overrides" --namespace kyma-system \
    --output-dir "$work/rendered" >/dev/null

new=$work/new
mkdir -p "$new/apply" "$new/delete" "$new/excluded"
: >"$new/excluded/to-exclude.yml"
: >"$work/produced" # kind:name of every document this release applies

for file in "$work"/rendered/*/templates/*; do
    count=$(q eval-all '[.] | length' "$file")
    for ((i = 0; i < count; i++)); do
        document=$(q "select(documentIndex == $i)" "$file")
        kind=$(q '.kind' <<<"$document")
        name=$(q '.metadata.name' <<<"$document")
        hook=$(q '.metadata.annotations."helm.sh/hook" // ""' <<<"$document")
        if [[ ,$hook, == *,pre-delete,* ]]; then
            emit "$document" "$new/excluded/to-exclude.yml"
            continue
        fi
        if [[ $kind == Deployment ]]; then
            document=$(q '(.spec.template.spec
                | (select(has("initContainers")).initContainers[], select(has("containers")).containers[])
                | select(has("image")) | .image) = ""' <<<"$document")
        fi
        echo "$kind:$name" >>"$work/produced"
        emit "$document" "$new/apply/$(basename "$file")"
    done
done

: >"$new/delete/to-delete.yml"
for file in "$out"/apply/*; do
    [[ -f $file ]] || continue
    count=$(q eval-all '[.] | length' "$file")
    for ((i = 0; i < count; i++)); do
        document=$(q "select(documentIndex == $i)" "$file")
        kind=$(q '.kind' <<<"$document")
        name=$(q '.metadata.name' <<<"$document")
        if ! grep -qxF "$kind:$name" "$work/produced"; then
            emit "$document" "$new/delete/to-delete.yml"
        fi
    done
done

mkdir -p "$out"
rm -rf "$out/apply" "$out/delete" "$out/excluded"
mv "$new/apply" "$new/delete" "$new/excluded" "$out/"
echo "yq runs: $(wc -l <"$runs")" >&2
