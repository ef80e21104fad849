#!/usr/bin/env bash
# make check-glibc: build and test weft on other glibc releases, each in a
# Debian chroot with that release's glibc and compiler.  weft must serve
# there (`weft info`: "host: ok", the chroot's glibc release, "mode:
# serving") and `make check` must pass there.
#
#   tests/glibc/run.sh [RELEASE...]    default: trixie sid
#   tests/glibc/run.sh --make-chroots [RELEASE...]
#                                      only make (or check) the cached
#                                      chroots; .ci/run starts this early,
#                                      in the background, so debootstrap
#                                      overlaps with its other steps
#
# RELEASE is a Debian suite name: trixie (Debian 13, glibc 2.41), sid
# (unstable, 2.43 in November 2026; it moves), bookworm (Debian 12, 2.36,
# the host's own release: a control for this script itself), or any other
# suite the mirror serves (glibc not pinned).
#
# The chroots come from the machine's own Debian mirror, the URI of its
# apt sources that serves the host's codename, so no host name is written
# here.  They are made once with debootstrap (--variant=minbase plus the
# compiler and the tools the tests call) and cached outside the clone;
# each run copies the working tree (tracked and untracked, not ignored
# files) into the chroot, builds weft there from scratch and runs it.
#
# Environment:
#   WEFT_GLIBC_CACHE    where the chroots live (default /var/cache/weft-glibc;
#                       one directory per release, about 1 GiB each)
#   WEFT_GLIBC_REFRESH  1: make the chroots again even if cached (sid's
#                       glibc moves; a cached sid chroot keeps the glibc of
#                       the day it was made, see its .weft-ready file)
#   WEFT_GLIBC_MIRROR   Debian mirror URL (default: derived, see above)
#   WEFT_GLIBC_TESTS    test names for tests/run.sh instead of all of
#                       `make check` (diagnosis of single tests)
#   WEFT_GLIBC_ENV      extra VAR=VALUE words for `weft info` and the tests
#                       (diagnosis only, e.g. WEFT_PRETEND_GLIBC=2.36 to
#                       force serving; such a run never counts as a pass:
#                       the glibc `weft info` names must be the chroot's)
#   WEFT_GLIBC_JOBS     make -j inside (default 2)
#   WEFT_REUSE_ITERS    passed to the tests (default here 2000, as in
#                       check-clang: these runs look for layout errors of
#                       a release, the host's `make check` for rare races)
#   WEFT_TEST_TIMEOUT   passed to tests/run.sh (its default 300 s)
#
# Logs: build/glibc/RELEASE/{debootstrap,build,info,check}.log.
# Needs root (debootstrap, chroot, mount).  Each release runs in its own
# mount and PID namespaces (unshare): the mounts (/proc, /sys, /dev,
# /dev/shm) never show on the host and vanish with the run even if it is
# killed (they are also unmounted explicitly on every exit path), and a
# process a test leaves behind is killed when the run ends.
#
# Exit status: 0 when every release was served and passed its checks,
# 1 when one was not served or a test failed, 2 for a setup error.
set -u
cd "$(dirname "$0")/../.." || exit 2
root=$(pwd)

cache=${WEFT_GLIBC_CACHE:-/var/cache/weft-glibc}
logroot=$root/build/glibc
jobs=${WEFT_GLIBC_JOBS:-2}
reuse_iters=${WEFT_REUSE_ITERS:-2000}
extra_env=${WEFT_GLIBC_ENV:-}

# Packages besides minbase: the compiler (build-essential has gcc, g++,
# make, libc6-dev), and what tests/run.sh's shell tests call: python3 and
# gnuplot (t_bench_report, t_syncbench), pigz and xz (t_programs), procps.
# musl-tools is left out: t_bench_report skips its musl rows without it.
packages=build-essential,python3,gnuplot-nox,pigz,xz-utils,procps

# glibc release each suite must have (empty: any, reported).  A stable
# suite keeps its glibc release for life; sid moves.
expected_glibc() {
	case $1 in
	bookworm) echo 2.36 ;;
	trixie) echo 2.41 ;;
	*) echo "" ;;
	esac
}

# The Debian version of a chroot's libc6 package.
libc6_version() { # chroot
	# shellcheck disable=SC2016 # dpkg-query's own ${...} syntax
	chroot "$1" dpkg-query -W -f='${Version}' libc6 2>/dev/null
}

die() { echo "check-glibc: $*" >&2; exit 2; }
note() { echo "check-glibc: $*" >&2; }

# ------------------------------------------------------------ mirror
# The URI of the machine's own Debian archive: the first apt source (deb822
# *.sources or one-line *.list) of type deb whose suites include the host's
# codename, so not the security archive or a third-party repository.
derive_mirror() {
	local codename f
	# shellcheck disable=SC1091 # the host's file
	codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || return 1
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# One paragraph per record; fields may be in any order.
		awk -v want="$codename" 'BEGIN { RS = ""; FS = "\n" }
		{
			types = ""; uris = ""; suites = ""; enabled = "yes"
			for (i = 1; i <= NF; i++) {
				line = $i
				if (line ~ /^[ \t]*#/) continue
				split(line, kv, ":")
				key = tolower(kv[1]); val = substr(line, length(kv[1]) + 2)
				gsub(/^[ \t]+|[ \t]+$/, "", val)
				if (key == "types") types = val
				else if (key == "uris") uris = val
				else if (key == "suites") suites = val
				else if (key == "enabled") enabled = tolower(val)
			}
			if (enabled == "no" || (" " types " ") !~ / deb /) next
			if ((" " suites " ") !~ (" " want " ")) next
			split(uris, u, /[ \t]+/); print u[1]; exit
		}' "$f"
	done | head -n1 | grep . && return 0
	# One-line format: deb [options] URI SUITE COMPONENT...
	grep -hE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -E 's/\[[^]]*\]//' |
		awk -v want="$codename" '$3 == want { print $2; exit }' | grep .
}

# ------------------------------------------------------------ chroots
need_tools() {
	[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mount)"
	command -v unshare >/dev/null || die "unshare (util-linux) is needed"
	command -v flock >/dev/null || die "flock (util-linux) is needed"
	if ! command -v debootstrap >/dev/null; then
		note "installing debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2 ||
			die "apt-get install debootstrap failed"
	fi
}

# rm -rf of a chroot, refused while anything is mounted below it (a
# bind mount of /dev there would take the host's devices with it).
remove_tree() { # dir
	[ -e "$1" ] || return 0
	if awk -v d="$(realpath "$1")/" 'index($5 "/", d) == 1 { found = 1 } END { exit !found }' \
		/proc/self/mountinfo; then
		note "not removing $1: something is mounted below it"
		return 1
	fi
	rm -rf "$1"
}

# Makes (or reuses) the chroot of a release; prints its directory.  A
# chroot counts only when complete: .weft-ready is written last, and a
# new one is built beside the old and moved into place.
ensure_chroot() { # release logdir
	local rel=$1 log=$2 dir=$cache/$1 new=$cache/$1.new t0
	mkdir -p "$cache"
	if [ -f "$dir/.weft-ready" ] && [ "${WEFT_GLIBC_REFRESH:-0}" != 1 ]; then
		echo "$dir"
		return 0
	fi
	[ -n "$mirror" ] || die "no Debian mirror found in the apt sources; set WEFT_GLIBC_MIRROR"
	note "$rel: making the chroot in $dir with debootstrap (a few minutes, once)"
	t0=$(date +%s)
	remove_tree "$new" || return 1
	# --variant=minbase: essential packages and apt only; the compiler
	# and test tools come with --include.  debootstrap mounts /proc (and
	# more in a container) inside the target while it configures the
	# packages: in a private mount namespace those mounts cannot outlive
	# it on the host, even if it is killed.
	if ! nice unshare --mount --propagation private \
		debootstrap --variant=minbase --include="$packages" \
		"$rel" "$new" "$mirror" >"$log/debootstrap.log" 2>&1; then
		tail -n 15 "$log/debootstrap.log" >&2
		remove_tree "$new"
		note "$rel: debootstrap failed (log: $log/debootstrap.log)"
		return 1
	fi
	# sid's Release file may be past its Valid-Until date by the time
	# the cached chroot runs apt again; this chroot is a test bed, not
	# a system to keep up to date.
	echo 'Acquire::Check-Valid-Until "false";' >"$new/etc/apt/apt.conf.d/99weft-no-valid-until"
	{
		echo "made $(date -u +%FT%TZ) from $mirror in $(( $(date +%s) - t0 )) s"
		echo "glibc $(libc6_version "$new")"
		echo "gcc $(chroot "$new" gcc -dumpfullversion 2>/dev/null)"
	} >"$new/.weft-ready"
	remove_tree "$dir" || return 1
	mv "$new" "$dir"
	note "$rel: chroot ready ($(sed -n 1p "$dir/.weft-ready"))"
	echo "$dir"
}

# ------------------------------------------------------------ inside
# Runs in a private mount namespace (see the re-exec below): mounts what
# the tests need, builds weft in the chroot and runs it.  Writes
# RESULT-style lines "key=value" to $log/result.
inside() { # release chroot logdir
	local rel=$1 log=$3 rc
	ch=$2 # global: the EXIT trap below uses it after we return
	local envs=(env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root
		LANG=C.UTF-8 TERM=dumb WEFT_REUSE_ITERS="$reuse_iters")
	[ -n "${WEFT_TEST_TIMEOUT:-}" ] && envs+=(WEFT_TEST_TIMEOUT="$WEFT_TEST_TIMEOUT")
	# shellcheck disable=SC2206 # VAR=VALUE words, split on purpose
	local extra=($extra_env)

	# shellcheck disable=SC2317 # called by the EXIT trap
	unmount_all() {
		# Innermost first; lazy so a stuck test process cannot keep a
		# mount alive (the namespace goes away with us in any case).
		local m
		for m in dev/shm dev/pts dev sys proc; do
			mountpoint -q "$ch/$m" && umount -l "$ch/$m"
		done
	}
	trap unmount_all EXIT
	trap 'exit 130' INT TERM HUP

	mount -t proc proc "$ch/proc" || return 2
	mount --rbind /sys "$ch/sys" || return 2
	mount --rbind /dev "$ch/dev" || return 2
	# A private /dev/shm: named semaphores and shm objects of the tests
	# stay in the chroot, and none of the host's leak in.
	mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$ch/dev/shm" || return 2

	# Some suites' minbase has no /etc/hosts (bookworm's), and the tests
	# resolve "localhost" (t_libc's getaddrinfo).
	[ -s "$ch/etc/hosts" ] ||
		printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
			>"$ch/etc/hosts"

	# The tree: a fresh copy of the working tree, built from scratch.
	rm -rf "$ch/weft"
	mkdir -p "$ch/weft"
	if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$root" ls-files -z -co --exclude-standard |
			(cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$ch/weft" || return 2
	else
		tar -C "$root" --exclude=./build --exclude='./build-*' --exclude=./bin \
			-cf - . | tar -xf - -C "$ch/weft" || return 2
	fi

	{
		echo "glibc=$(chroot "$ch" "${envs[@]}" getconf GNU_LIBC_VERSION | awk '{print $2}')"
		echo "libc6=$(libc6_version "$ch")"
		echo "gcc=$(chroot "$ch" "${envs[@]}" gcc -dumpfullversion)"
	} >"$log/result"

	note "$rel: building weft ($(grep '^gcc=' "$log/result" | cut -d= -f2))"
	local t0
	t0=$(date +%s)
	chroot "$ch" "${envs[@]}" nice make -C /weft -j"$jobs" all tests >"$log/build.log" 2>&1
	rc=$?
	echo "build_rc=$rc" >>"$log/result"
	echo "build_s=$(( $(date +%s) - t0 ))" >>"$log/result"
	if [ $rc -ne 0 ]; then
		tail -n 20 "$log/build.log" >&2
		return 1
	fi

	chroot "$ch" "${envs[@]}" "${extra[@]}" /weft/bin/weft info >"$log/info.log" 2>&1
	echo "info_rc=$?" >>"$log/result"

	note "$rel: running the tests (log: $log/check.log)"
	t0=$(date +%s)
	if [ -n "${WEFT_GLIBC_TESTS:-}" ]; then
		# shellcheck disable=SC2086 # a list of names
		chroot "$ch" "${envs[@]}" "${extra[@]}" nice /weft/tests/run.sh $WEFT_GLIBC_TESTS \
			>"$log/check.log" 2>&1
	else
		chroot "$ch" "${envs[@]}" "${extra[@]}" nice make -C /weft check \
			>"$log/check.log" 2>&1
	fi
	echo "check_rc=$?" >>"$log/result"
	echo "check_s=$(( $(date +%s) - t0 ))" >>"$log/result"
	return 0
}

if [ "${1:-}" = --inside ]; then
	shift
	inside "$@"
	exit $?
fi

# ------------------------------------------------------------ report
field() { sed -n "s/^$2=//p" "$1" | tail -n1; }
info_line() { sed -n "s/^$2: //p" "$1" | head -n1; }

# Prints the release's report and returns 0 only if weft served there
# and the tests passed.
report() { # release logdir
	local rel=$1 log=$2 r=$2/result info=$2/info.log ok=0
	local glibc want got_glibc host mode list summary failed
	glibc=$(field "$r" glibc)
	want=$(expected_glibc "$rel")
	echo "== $rel: glibc $glibc (libc6 $(field "$r" libc6)), gcc $(field "$r" gcc)"
	if [ "$(field "$r" build_rc)" != 0 ]; then
		echo "   build: FAILED (exit $(field "$r" build_rc)); log $log/build.log"
		return 1
	fi
	echo "   build: ok in $(field "$r" build_s) s"
	got_glibc=$(info_line "$info" glibc)
	host=$(info_line "$info" host)
	mode=$(info_line "$info" mode)
	list=$(info_line "$info" "glibc thread list")
	echo "   weft info: glibc: $got_glibc"
	echo "              host: $host"
	echo "              mode: $mode"
	[ -n "$list" ] && echo "              glibc thread list: $list"
	grep '^weft:' "$info" | sed 's/^/              stderr: /'
	if [ -n "$want" ] && [ "$glibc" != "$want" ]; then
		echo "   expected glibc $want in the $rel chroot, got $glibc"
		ok=1
	fi
	if [ "$got_glibc" != "$glibc" ] || [ "$host" != ok ] || [ "$mode" != serving ]; then
		echo "   NOT SERVED: expected \"glibc: $glibc\", \"host: ok\", \"mode: serving\";"
		echo "   got \"glibc: $got_glibc\", \"host: $host\", \"mode: $mode\""
		ok=1
	fi
	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log/check.log" | tail -n1)
	failed=$(sed -n 's/^failed: //p' "$log/check.log" | tail -n1)
	echo "   tests: ${summary:-no summary (exit $(field "$r" check_rc))} in $(field "$r" check_s) s"
	[ -n "$failed" ] && echo "   failed: $failed" | fold -s -w 100 | sed '2,$s/^/           /'
	if [ "$(field "$r" check_rc)" != 0 ]; then
		# What each failing test printed (tests/run.sh quotes it with
		# "    | "), so a CI log that keeps only this report says why.
		awk '/^FAIL /{p=1; print "   " $0; next} p && /^    \| /{print "   " $0; next} {p=0}' \
			"$log/check.log" | head -n 80
		echo "   expected every test to pass; log $log/check.log"
		ok=1
	fi
	[ -n "$extra_env" ] && echo "   (diagnosis run with $extra_env: not a pass whatever the results)" && ok=1
	return $ok
}

# ------------------------------------------------------------ main
make_only=0
if [ "${1:-}" = --make-chroots ]; then
	make_only=1
	shift
fi
releases=("$@")
[ ${#releases[@]} -gt 0 ] || releases=(trixie sid)
need_tools
mirror=${WEFT_GLIBC_MIRROR:-$(derive_mirror)}
started=$(date +%s)
if [ $make_only -eq 1 ]; then
	for rel in "${releases[@]}"; do
		log=$logroot/$rel.chroot
		rm -rf "$log"
		mkdir -p "$log" "$cache" || die "cannot make $log or $cache"
		exec 9>"$cache/.$rel.lock"
		flock 9
		ensure_chroot "$rel" "$log" >/dev/null || status=1
		exec 9>&-
	done
	echo "check-glibc: chroots ready in $(( $(date +%s) - started )) s"
	exit "${status:-0}"
fi
status=0
for rel in "${releases[@]}"; do
	log=$logroot/$rel
	rm -rf "$log"
	mkdir -p "$log"
	# One run per release at a time (another clone may share the cache).
	mkdir -p "$cache" || die "cannot make $cache"
	exec 9>"$cache/.$rel.lock"
	flock 9
	ch=$(ensure_chroot "$rel" "$log") || { echo "== $rel: NO CHROOT (debootstrap failed)"; status=1; continue; }
	t0=$(date +%s)
	# Own mount and PID namespaces: the mounts never show on the host, and
	# every process of the run (a test's stray child too) ends with it.
	unshare --mount --propagation private --pid --fork \
		"$0" --inside "$rel" "$ch" "$log"
	rc=$?
	exec 9>&-
	if [ $rc -eq 2 ] || [ ! -s "$log/result" ]; then
		echo "== $rel: setup inside the chroot failed (exit $rc)"
		status=1
		continue
	fi
	echo "total_s=$(( $(date +%s) - t0 ))" >>"$log/result"
	report "$rel" "$log" >"$log/report" || status=1
	cat "$log/report"
done
echo "check-glibc took $(( $(date +%s) - started )) s"
exit $status
