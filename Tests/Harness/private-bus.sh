#!/bin/sh
# Starts a private dbus-daemon for tier-2 tests and benchmarks.
# Usage: private-bus.sh DIR [SERVICEDIR]    (DIR: an empty temporary directory)
# Writes DIR/bus.conf, listens on DIR/bus, prints the bus address on the first line of stdout,
# then stays in the foreground as the daemon (kill it to stop the bus). SERVICEDIR: a directory of
# D-Bus service files the daemon starts services from on demand (none without it).
set -eu
dir=${1:?usage: private-bus.sh DIR [SERVICEDIR]}
servicedir=""
if [ -n "${2:-}" ]; then servicedir="<servicedir>$2</servicedir>"; fi
if ! command -v dbus-daemon >/dev/null 2>&1; then
    echo "private-bus.sh: dbus-daemon not found; install it: apt-get install dbus-daemon" >&2
    exit 127
fi
cat > "$dir/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$dir/bus</listen>
  <auth>EXTERNAL</auth>
  $servicedir
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
  <limit name="max_incoming_bytes">1000000000</limit>
  <limit name="max_outgoing_bytes">1000000000</limit>
  <limit name="max_message_size">134217728</limit>
  <limit name="max_replies_per_connection">50000</limit>
  <limit name="reply_timeout">300000</limit>
  <limit name="max_connections_per_user">10000</limit>
  <limit name="max_match_rules_per_connection">50000</limit>
</busconfig>
CONF
exec dbus-daemon --nofork --nopidfile --nosyslog --config-file="$dir/bus.conf" --print-address=1
