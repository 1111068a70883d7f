#!/usr/bin/env bash
# Launch the app on a private Xvfb display, optionally type into it, and save a screenshot.
# usage: [HQT_THEME=dark] tools/xvfb_shot.sh OUT.png [seconds-to-wait] [text-to-type]
set -euo pipefail
out=${1:?usage: xvfb_shot.sh OUT.png [wait] [text]}
wait_s=${2:-6}
text=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
disp=:$((90 + RANDOM % 9))
Xvfb "$disp" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
trap 'kill $app $xvfb 2>/dev/null || true' EXIT
export DISPLAY=$disp
unset QT_QPA_PLATFORM
data=$(mktemp -d)
if [ -n "${HQT_THEME:-}" ]; then
  mkdir -p "$data/config"
  printf '{"theme": "%s"}' "$HQT_THEME" >"$data/config/preferences.json"
fi
sleep 1
HERMES_QT_DATA_DIR=$data "$root/.venv/bin/hermes-qt" --data-dir "$data" >"$data/app.log" 2>&1 &
app=$!
sleep "$wait_s"
if [ -n "$text" ]; then
  # No window manager: click into the composer (bottom of the window), then type.
  xdotool mousemove 640 665 click 1
  sleep 0.5
  xdotool type --delay 20 "$text"
  xdotool key Return
  sleep "$wait_s"
fi
import -window root -crop 1040x700+0+0 "$out"
echo "saved $out (app log: $data/app.log)"
