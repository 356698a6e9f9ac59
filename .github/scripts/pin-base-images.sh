#!/usr/bin/env bash
# Pins the Dockerfile's base images by digest, or checks the pins.
#
#   .github/scripts/pin-base-images.sh           resolve each <IMAGE> build argument's tag to the
#                                                digest of its multi-arch index and write it into
#                                                <IMAGE>_DIGEST in the Dockerfile
#   .github/scripts/pin-base-images.sh --check   fail unless every <IMAGE>_DIGEST is set and resolves
#                                                in its registry (the release workflow runs this)
#
# Needs registry access and either crane (go-containerregistry) or docker buildx.
set -euo pipefail
cd "$(dirname "$0")/../.."
DOCKERFILE=${DOCKERFILE:-Dockerfile}

digest_of() {
  if command -v crane >/dev/null 2>&1; then
    crane digest "$1"
  else
    docker buildx imagetools inspect "$1" --format '{{json .Manifest}}' | sed -E 's/.*"digest":"(sha256:[a-f0-9]{64})".*/\1/'
  fi
}

# Every "ARG NAME=value" whose companion "ARG NAME_DIGEST=" exists.
images=$(sed -nE 's/^ARG ([A-Z_]+)_DIGEST=.*/\1/p' "$DOCKERFILE")
[ -n "$images" ] || { echo "no <IMAGE>_DIGEST build arguments in $DOCKERFILE" >&2; exit 1; }

status=0
for name in $images; do
  ref=$(sed -nE "s/^ARG ${name}=(.*)$/\1/p" "$DOCKERFILE")
  pinned=$(sed -nE "s/^ARG ${name}_DIGEST=(.*)$/\1/p" "$DOCKERFILE")
  if [ "${1:-}" = "--check" ]; then
    if [[ ! $pinned =~ ^sha256:[a-f0-9]{64}$ ]]; then
      echo "UNPINNED: $name=$ref has no digest (run .github/scripts/pin-base-images.sh and commit)" >&2
      status=1
      continue
    fi
    if digest_of "$ref@$pinned" >/dev/null; then
      echo "ok: $ref@$pinned resolves"
    else
      echo "BROKEN: $ref@$pinned does not resolve" >&2
      status=1
    fi
    current=$(digest_of "$ref" || true)
    if [ -n "$current" ] && [ "$current" != "$pinned" ]; then
      echo "note: $ref now points to $current (pinned: $pinned); refresh when you want the update" >&2
    fi
  else
    digest=$(digest_of "$ref")
    [[ $digest =~ ^sha256:[a-f0-9]{64}$ ]] || { echo "cannot resolve $ref (got '$digest')" >&2; exit 1; }
    sed -i -E "s|^ARG ${name}_DIGEST=.*$|ARG ${name}_DIGEST=${digest}|" "$DOCKERFILE"
    echo "pinned $ref@$digest"
  fi
done
exit $status
