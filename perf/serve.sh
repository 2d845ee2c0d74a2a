# Sourced by the perf scripts: one `llmload serve` on an ephemeral port of
# 127.0.0.1 at a time, stopped by `serve_stop` (call it from the script's
# EXIT trap so an interrupted measurement leaves no server behind).

SERVER_PID=""

# serve_start OUT CMD...: runs CMD (a `serve --listen 127.0.0.1:0` command
# line, with any prefix such as taskset) in the background with its stdout
# in OUT, waits for the address it prints first, and sets ADDR (host:port)
# and URL (http://ADDR).
serve_start() {
    local out=$1
    shift
    rm -f "$out"
    "$@" >"$out" &
    SERVER_PID=$!
    for _ in $(seq 100); do
        [ -s "$out" ] && break
        sleep 0.1
    done
    ADDR=$(head -n1 "$out" | sed -e 's|^https\?://||')
    URL="http://$ADDR"
}

# serve_stop: SIGTERM and wait (the server prints its final counters).
serve_stop() {
    if [ -n "$SERVER_PID" ]; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
