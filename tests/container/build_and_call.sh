#!/usr/bin/env bash
# The mock's image, built and called for real, with no image registry: a base made from Debian's
# packages (mmdebstrap), the repository's Dockerfile built on it by buildah, the image's own
# command started with `buildah run`, then called and stopped. Everything comes from Debian's
# packages (apt-get install buildah podman mmdebstrap) and runs as root.
#
#   tests/container/build_and_call.sh        # what tests/container/test_image.py runs
#
# Checks, each printed as `ok:` or `FAIL:` (the script exits 1 on the first failure):
#   - the image's configured user is not root (and the command runs as that user);
#   - the image's command serves GET /v1/openapi.json, and a keyed GET /v1/capabilities;
#   - the control plane refuses a call without its token, or with another, and answers the token;
#   - the image's HEALTHCHECK command succeeds against the started mock, and fails once it stops.
#
# `podman run` is refused on the kit's CI machine (crun: setrlimit RLIMIT_NOFILE: Operation not
# permitted), so the image's command runs under `buildah run --isolation chroot`, whose network
# is the host's: the mock listens on the host's port 8080, which must be free.
#
# The base trusts what this machine trusts: the machine's CA bundle is copied into it and named
# in its /etc/pip.conf, so that pip's downloads during the build pass a TLS-inspecting proxy as
# the machine's own do ($PIP_INDEX_URL, when set, is passed on too).
set -euo pipefail
cd "$(dirname "$0")/../.."

base=localhost/cgcas-kit-base:bookworm
image=localhost/cgcas-kit-mock:check
port=8080
token=ci-control-token-$RANDOM$RANDOM
key=sk_test_acme_owner # a fixture key (fixtures/): acme / alice (owner)
work=$(mktemp -d /tmp/cgcas-image.XXXXXX)
container=""
mock_pid=""

say() { printf '%s\n' "$*"; }
fail() {
  say "FAIL: $*"
  exit 1
}
elapsed() { say "== $1: $(($(date +%s) - started)) s"; }

cleanup() {
  if [ -n "$mock_pid" ]; then kill -TERM -- "-$mock_pid" 2>/dev/null || true; fi
  if [ -n "$container" ]; then buildah rm "$container" >/dev/null 2>&1 || true; fi
  # A CI machine is thrown away after the run: removing the images there costs 15 s for nothing.
  if [ -z "${CI:-}" ]; then buildah rmi "$image" "$base" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

for tool in mmdebstrap buildah podman curl python3; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (apt-get install buildah podman mmdebstrap curl)"
done
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  fail "port $port is in use on this machine: the image's command listens there (buildah run shares the host's network)"
fi

# 1. The base: Python 3.11 with its venv module (ensurepip), from Debian bookworm.
started=$(date +%s)
pip_conf="[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n"
case "${PIP_INDEX_URL:-}" in http*) pip_conf+="index-url = $PIP_INDEX_URL\n" ;; esac
# dpkg without fsync, in a tempdir on tmpfs: the same base in a third of the time on a busy disk.
TMPDIR=/dev/shm mmdebstrap --quiet --variant=minbase --include=python3,python3-venv --dpkgopt=force-unsafe-io \
  --customize-hook='mkdir -p "$1/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/"' \
  --customize-hook="printf '$pip_conf' > \"\$1/etc/pip.conf\"" \
  bookworm - | podman import --quiet - "$base" >/dev/null
elapsed "base image from Debian's packages (mmdebstrap | podman import)"

# 2. The image, from the repository's Dockerfile (Docker format: OCI images drop HEALTHCHECK).
started=$(date +%s)
buildah build --quiet --isolation chroot --format docker --build-arg "BASE=$base" -t "$image" . \
  >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "buildah build"; }
elapsed "image built (buildah build --build-arg BASE=$base)"

started=$(date +%s)
buildah inspect --type image "$image" >"$work/image.json"
config() { python3 -c "import json, sys; print(json.dumps(json.load(open(sys.argv[1]))['Docker']['config'].get(sys.argv[2])))" "$work/image.json" "$1"; }
user=$(config User | python3 -c "import json, sys; print(json.load(sys.stdin) or '')")
case "${user%%:*}" in "" | root | 0) fail "the image's user is root (User: '$user')" ;; esac
say "ok: the image's configured user is $user, not root"

# 3. The image's own command, started as the image configures it (user, environment, workdir).
container=$(buildah from --quiet "$image")
uid=$(buildah run --isolation chroot "$container" -- id -u)
[ "$uid" != 0 ] || fail "buildah run ran the image's command as root"
mapfile -t command < <(config Cmd | python3 -c "import json, sys; print('\n'.join(json.load(sys.stdin)))")
say "   starting: ${command[*]} (uid $uid)"
setsid buildah run --isolation chroot -e "MOCKSERVER_CONTROL_TOKEN=$token" "$container" -- "${command[@]}" \
  >"$work/mock.log" 2>&1 &
mock_pid=$!
for _ in $(seq 1 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/v1/openapi.json" && break
  kill -0 "$mock_pid" 2>/dev/null || { cat "$work/mock.log"; fail "the image's command exited"; }
  sleep 0.2
done

# status URL [curl options]: the HTTP status of one call (the body goes to $work/body).
status() { curl -s -o "$work/body" -w '%{http_code}' "$@"; }
answer=$(status "http://127.0.0.1:$port/v1/openapi.json")
[ "$answer" = 200 ] && grep -q '"openapi"' "$work/body" || fail "GET /v1/openapi.json answered $answer"
say "ok: GET /v1/openapi.json answers 200 with the contract"
answer=$(status -H "Authorization: Bearer $key" "http://127.0.0.1:$port/v1/capabilities")
[ "$answer" = 200 ] && grep -q '"capabilities"' "$work/body" || fail "GET /v1/capabilities with $key answered $answer"
answer=$(status "http://127.0.0.1:$port/v1/capabilities")
[ "$answer" = 401 ] || fail "GET /v1/capabilities without a key answered $answer"
say "ok: GET /v1/capabilities answers 200 with the fixture key $key, and 401 without a key"

answer=$(status "http://127.0.0.1:$port/_mock/clock")
[ "$answer" = 401 ] || fail "the control plane answered $answer to a call without its token"
answer=$(status -H "Authorization: Bearer not-$token" "http://127.0.0.1:$port/_mock/clock")
[ "$answer" = 401 ] || fail "the control plane answered $answer to a call with another token"
answer=$(status -H "Authorization: Bearer $token" "http://127.0.0.1:$port/_mock/clock")
[ "$answer" = 200 ] || fail "the control plane answered $answer to its token"
say "ok: the control plane (GET /_mock/clock) refuses a call without its token or with another (401), and answers its token (200)"

# 4. The image's HEALTHCHECK, run in the container beside the mock, then after it stops.
mapfile -t check < <(config Healthcheck | python3 -c "
import json, sys
test = (json.load(sys.stdin) or {}).get('Test') or ['NONE']
print('\n'.join(test[1:] if test[0] == 'CMD' else ['sh', '-c', test[1]] if test[0] == 'CMD-SHELL' else []))")
[ "${#check[@]}" -gt 0 ] || fail "the image has no HEALTHCHECK command"
buildah run --isolation chroot "$container" -- "${check[@]}" >"$work/health.log" 2>&1 ||
  { cat "$work/health.log"; fail "the HEALTHCHECK command failed against the started mock"; }
say "ok: the HEALTHCHECK command succeeds against the started mock"
elapsed "started, called and checked"

kill -TERM -- "-$mock_pid"
wait "$mock_pid" 2>/dev/null || true
mock_pid=""
if buildah run --isolation chroot "$container" -- "${check[@]}" >/dev/null 2>&1; then
  fail "the HEALTHCHECK command succeeded with the mock stopped"
fi
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "the mock still listens after it was stopped"; fi
say "ok: stopped; the HEALTHCHECK command then fails"
