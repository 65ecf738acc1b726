#!/usr/bin/env bash
# release.sh VERSION: cut a release of every module, the way gopls is
# released from x/tools:
#
#  1. a release commit in which every module requires its siblings at
#     VERSION and no go.mod has a replace line;
#  2. the tags Go expects for modules in subdirectories on that commit
#     (jsonrpcframe/VERSION, atmclient/VERSION, …, agentmcp/VERSION);
#  3. a commit that puts the development replace lines back (main keeps
#     requiring VERSION, and every module is still built and tested
#     against its siblings' working trees; nothing needs the tags).
#
# It refuses a dirty tree, a malformed version and tags that exist. It does
# not run the tests (CI does) and pushes nothing: push the branch and the
# tags yourself (git push --follow-tags, or git push origin <tags>).
set -euo pipefail

version=${1:-}
if [[ ! $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release: VERSION must look like v1.2.3 (got '${version}'); use make release VERSION=vX.Y.Z" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
prefix=github.com/atm-agent-mcp/atm-agent-mcp
modules=(jsonrpcframe atmclient registry codexchild mailbridge agentmcp testscripts)
tagged=(jsonrpcframe atmclient registry codexchild mailbridge agentmcp)

if [[ -n "$(git status --porcelain)" ]]; then
  echo "release: the work tree is not clean; commit or stash first:" >&2
  git status --short >&2
  exit 1
fi
for m in "${tagged[@]}"; do
  if git rev-parse -q --verify "refs/tags/$m/$version" >/dev/null; then
    echo "release: tag $m/$version exists already" >&2
    exit 1
  fi
done

# siblings prints the sibling module paths a module's go.mod requires or
# replaces (not the module's own path).
siblings() {
  (cd "$1" && GOWORK=off go mod edit -json) | grep -o "\"$prefix/[a-z]*\"" | tr -d '"' | sort -u | grep -vx "$prefix/$1" || true
}

# 1. The release commit: siblings at $version, no replace lines.
for m in "${modules[@]}"; do
  args=()
  for p in $(siblings "$m"); do
    args+=("-require=$p@$version" "-dropreplace=$p")
  done
  if ((${#args[@]})); then
    (cd "$m" && GOWORK=off go mod edit "${args[@]}")
  fi
done
git commit -q -a -m "release $version: every module requires its siblings at $version; no replace lines"
release=$(git rev-parse HEAD)

# 2. The tags.
for m in "${tagged[@]}"; do
  git tag "$m/$version" "$release"
done

# 3. Back to development: the replace lines again, the requires stay.
for m in "${modules[@]}"; do
  args=()
  for p in $(siblings "$m"); do
    args+=("-replace=$p=../${p##*/}")
  done
  if ((${#args[@]})); then
    (cd "$m" && GOWORK=off go mod edit "${args[@]}")
  fi
done
git commit -q -a -m "after release $version: the development replace lines again (siblings still required at $version)"

echo "release $version: commit $release tagged ${tagged[*]/%//$version}"
echo "push with: git push && git push origin $(printf '%s ' "${tagged[@]/%//$version}")"
