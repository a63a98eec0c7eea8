#!/usr/bin/env bash
# The installer test: build the packaged app, install the .deb on this machine, start the
# installed llama-server, launch the installed app offscreen and check it reaches its main
# window and gets an answer from that server through the window; then the same with the
# app's own built-in runtime; then as a new user with no model at all: the first-run
# screen's Download button fetches the recommended model from a local stand-in for the
# Hugging Face Hub and the first answer uses a tool; then remove the package and check
# nothing is left.
#
#   bash packaging/test-package.sh          (as root, or with sudo; .ci/run calls it)
#
# Needs a GGUF model: $LOOMCHAT_TEST_MODEL, else the bundled small model that
# `bash packaging/bootstrap.sh test` puts together.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
fail() { echo "FAILED: $*" >&2; exit 1; }

[ "${SKIP_BUILD:-0}" = 1 ] || bash packaging/build.sh
deb="$(ls build/loomchat_*.deb | head -n 1)"
model="${LOOMCHAT_TEST_MODEL:-$(.venv/bin/python -c 'from desktop.core.runtime import ensure_bundled_model; print(ensure_bundled_model())')}"

echo "== install $deb"
# desktop-file-validate checks the menu entry against the freedesktop spec.
$sudo apt-get install -y -qq --no-install-recommends desktop-file-utils >/dev/null || true
$sudo apt-get install -y -qq --no-install-recommends "./$deb" >/dev/null
[ -L /usr/bin/loomchat ] || fail "loomchat is not on PATH"
[ -x /opt/loomchat/loomchat ] || fail "/opt/loomchat/loomchat missing"
[ -f /usr/share/applications/loomchat.desktop ] || fail "no menu entry"
[ -f /usr/share/icons/hicolor/256x256/apps/loomchat.png ] || fail "no icon"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate /usr/share/applications/loomchat.desktop
fi

scratch="$(mktemp -d)"
server_pid=""
hub_pid=""
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  [ -z "$hub_pid" ] || kill "$hub_pid" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

echo "== the installed llama-server (portable build)"
server=/opt/loomchat/_internal/llama/llama-server
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$server" --model "$model" --host 127.0.0.1 --port "$port" --threads 2 --parallel 1 \
  --ctx-size 4096 --jinja --no-webui > "$scratch/llama-server.log" 2>&1 &
server_pid=$!
healthy() { python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null; }
for _ in $(seq 1 120); do
  healthy && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$scratch/llama-server.log"; fail "llama-server exited"; }
  sleep 0.5
done
healthy || fail "llama-server never became healthy"

check() {  # NAME SETTINGS_JSON [PYTHON_CHECK [QUESTION [ENV=VALUE...]]]: the installed
  # app's self-check, so set up (no settings file for empty SETTINGS_JSON)
  local data="$scratch/$1"
  mkdir -p "$data"
  [ -z "$2" ] || echo "$2" > "$data/settings.json"
  echo "== the installed app, $1"
  local report
  report="$(cd / && env LOOMCHAT_DATA_DIR="$data" QT_QPA_PLATFORM=offscreen \
    LOOMCHAT_SELF_CHECK="${4:-Say hello in five words.}" "${@:5}" timeout 900 loomchat | tail -n 1)" \
    || { echo "$report"; tail -n 30 "$data/logs/"*.log 2>/dev/null; fail "self-check ($1)"; }
  echo "$report"
  python3 - "$report" <<'PY'
import json, sys
report = json.loads(sys.argv[1])
assert report["window_shown"] and report["connected"], report
assert report["answer"] and not report["answer"].startswith("failed"), report
assert report["tools"] and set(report["tools"].values()) == {"ok"}, report["tools"]
PY
  [ -z "${3:-}" ] || python3 -c "import json, sys; report = json.loads(sys.argv[1]); $3" \
    "$report" "$data"
}
check "against-llama-server" "{\"backend\": \"llamacpp\", \"url\": \"http://127.0.0.1:$port\"}"
kill "$server_pid"; server_pid=""
check "built-in-runtime" "{\"backend\": \"builtin\", \"runtime_model\": \"$model\"}" \
  'assert report["runtime"] == "/opt/loomchat/_internal/llama/llama-server", report'

# The stand-in Hub serves the test model under every catalogue name: whichever model this
# machine is recommended, the app downloads it, checks its sha256 and runs it. The answer
# must have used the calculator; its words are the sampled model's (not checked).
"$here/.venv/bin/python" -m tests.support.hub_server --gguf "$model" \
  --catalogue "$here/resources/models.json" > "$scratch/hub.url" &
hub_pid=$!
for _ in $(seq 1 120); do [ -s "$scratch/hub.url" ] && break; sleep 0.5; done
[ -s "$scratch/hub.url" ] || fail "the stand-in Hub did not start"
check "first-run-download" "" '
first = report["first_run"]
assert first["shown"] and first["first_button"].startswith("Download "), first
assert first["chat_shown"] and first["model"].startswith(sys.argv[2]), first
assert report["runtime"] == "/opt/loomchat/_internal/llama/llama-server", report
assert "calculator" in report["tool_calls"], report' \
  "What is 23 times 19?" HF_ENDPOINT="$(cat "$scratch/hub.url")" \
  LOOMCHAT_SELF_CHECK_FIRST_RUN=download
kill "$hub_pid"; hub_pid=""

echo "== remove"
$sudo apt-get remove -y -qq loomchat >/dev/null
[ ! -e /opt/loomchat ] || fail "/opt/loomchat is left behind"
[ ! -e /usr/bin/loomchat ] || fail "/usr/bin/loomchat is left behind"
[ ! -e /usr/share/applications/loomchat.desktop ] || fail "the menu entry is left behind"

echo "== sizes"
du -sh build/dist/loomchat | sed 's/\t/  bundle folder: /'
ls -l build/*.tar.gz build/*.deb | awk '{printf "%s  %.1f MB\n", $9, $5 / 1e6}'
echo "package test passed"
