#!/bin/sh
# System packages that some tests need (an SSH server for the remote-host tests, Debian's
# chromium for the browser test of `hermes-procs web`, docker.io for the container tests
# against a real daemon: tests/dockerd.py). Installed
# with apt-get when running as root and missing; otherwise those tests skip and say why.
set -u
need=""
[ -x /usr/sbin/sshd ] || need="$need openssh-server"
command -v ssh >/dev/null 2>&1 || need="$need openssh-client"
[ -x /usr/bin/chromium ] || need="$need chromium"
[ -x /usr/sbin/dockerd ] || need="$need docker.io"
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "note: missing$need (not root or no apt-get): the tests that need them will skip" >&2
    exit 0
fi
echo "installing$need for the tests" >&2
for try in 1 2 3 4 5; do
    if apt-get update -qq >/dev/null 2>&1 &&
       DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null 2>&1; then
        exit 0
    fi
    sleep 5  # another apt-get may hold the lock
done
echo "warning: could not install$need: the tests that need them will skip" >&2
exit 0
