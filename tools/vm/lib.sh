# SPDX-License-Identifier: GPL-2.0
# Shared settings for the VM test harness and the lint, docs and DKMS
# checks; sourced, not run.

NDK_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NDK_VM_DIR=$NDK_TOP/tools/vm
NDK_CACHE_DIR=${NDK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ndk}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The kernel series every mode builds, boots and lints for: Debian 12
# carries linux-source-<series> and matching distribution headers for 6.1
# and 6.12; 7.3's source comes from Debian 13 (fetch_ksrc).
NDK_KERNELS="6.1 6.12 7.3"
NDK_KERNEL=${NDK_KERNEL:-6.1}
case " $NDK_KERNELS " in
*" $NDK_KERNEL "*) ;;
*) die "NDK_KERNEL=$NDK_KERNEL: supported series are $NDK_KERNELS" ;;
esac
export NDK_KERNEL
# CPUs of every VM; the judges fail a guest that brings up fewer.
NDK_VM_CPUS=${NDK_VM_CPUS:-2}
export NDK_VM_CPUS
# Memory of the VMs of check, selftest-loop, check-cross and distro-check:
# the cases need far less, and the debug kernel's kmemleak scans, a good
# part of a run under TCG, grow with the memory.
test_vm_mem=1G
NDK_KSRC_PKG=linux-source-$NDK_KERNEL
# Debian's meta-package of the distribution headers of the series, for
# the series of Debian 12 only: 7.3's headers are Debian 13 binaries, which
# this (Debian 12) host never installs.
case $NDK_KERNEL in
6.1)
	NDK_KHDR_PKG=linux-headers-amd64
	NDK_KSRC_SUITE= ;;
6.12)
	NDK_KHDR_PKG=linux-headers-6.12-amd64
	NDK_KSRC_SUITE= ;;
7.3)
	NDK_KHDR_PKG=
	NDK_KSRC_SUITE=trixie-backports ;;
esac
# The source of a series of another Debian release is downloaded by the
# apt of that release's Debian root (distro_root), as its other packages
# are, and unpacked under the cache; the package is arch-independent.
if [ -n "$NDK_KSRC_SUITE" ]; then
	NDK_KSRC_DIR=$NDK_CACHE_DIR/$NDK_KSRC_SUITE/$NDK_KSRC_PKG
	NDK_KSRC_TARBALL=$NDK_KSRC_DIR/root/usr/src/linux-source-$NDK_KERNEL.tar.xz
else
	NDK_KSRC_TARBALL=/usr/src/linux-source-$NDK_KERNEL.tar.xz
fi

# Die unless Debian's distribution headers of the series may be installed
# here; what needs them ($1) cannot run on this host otherwise.
need_khdr() {
	[ -n "$NDK_KHDR_PKG" ] ||
		die "$1 needs Debian's headers of $NDK_KERNEL, Debian 13 binaries, which this host does not install"
}

# Install those of the Debian packages "$@" that are missing.
install_missing() {
	local p missing=() lock=/run/lock/ndk-apt.lock
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} = 0 ] && return 0
	log "installing: ${missing[*]}"
	# apt-get waits for dpkg's locks (DPkg::Lock::Timeout) but fails at
	# once on the lock of the lists another `apt-get update` holds: the
	# harness's runs (two targets started together) take turns by a lock of
	# their own, machine-wide as apt's state is. Both waits are bounded.
	(
		flock -w 600 9 || die "another run has held $lock for 10 minutes"
		export DEBIAN_FRONTEND=noninteractive
		apt-get -q -o DPkg::Lock::Timeout=600 update >&2 &&
			apt-get -q -o DPkg::Lock::Timeout=600 install -y \
				--no-install-recommends "${missing[@]}" >&2
	) 9>"$lock"
}

# Make NDK_KSRC_TARBALL present: install Debian 12's source package of the
# series, or download the other release's once, with the newest lists of
# the release's Debian root, and unpack it. The subshell holds the root's
# lock; a run that waited for it finds the source fetched.
fetch_ksrc() {
	if [ -z "$NDK_KSRC_SUITE" ]; then
		install_missing "$NDK_KSRC_PKG"
		return
	fi
	[ -f "$NDK_KSRC_DIR/.ndk-done" ] && return 0
	(
		distro_select
		mkdir -p "$NDK_CACHE_DIR"
		exec 8>"$NDK_DISTRO_ROOT.lock"
		flock 8
		[ -f "$NDK_KSRC_DIR/.ndk-done" ] && exit 0
		distro_root
		log "downloading $NDK_KSRC_PKG from $NDK_KSRC_SUITE"
		rm -rf "$NDK_KSRC_DIR"
		mkdir -p "$NDK_KSRC_DIR"
		in_root apt-get update -q >&2 ||
			die "apt-get update failed in $NDK_DISTRO_ROOT"
		root_download "$NDK_KSRC_DIR" "$NDK_KSRC_PKG/$NDK_KSRC_SUITE" ||
			die "cannot download $NDK_KSRC_PKG from $NDK_KSRC_SUITE"
		deb=$(compgen -G "$NDK_KSRC_DIR/${NDK_KSRC_PKG}_*.deb" | head -n 1)
		dpkg-deb -x "$deb" "$NDK_KSRC_DIR/root"
		dpkg-deb -f "$deb" Version >"$NDK_KSRC_DIR/version"
		touch "$NDK_KSRC_DIR/.ndk-done"
	)
}

# Version of the series' source package (fetch_ksrc has run).
ksrc_version() {
	if [ -z "$NDK_KSRC_SUITE" ]; then
		dpkg-query -W -f='${Version}' "$NDK_KSRC_PKG" 2>/dev/null ||
			die "$NDK_KSRC_PKG is not installed"
	else
		cat "$NDK_KSRC_DIR/version" 2>/dev/null ||
			die "$NDK_KSRC_PKG is not downloaded (tools/vm/install-deps.sh)"
	fi
}

# Tracked files matching git pathspecs "$@" (every one without), relative
# to the current directory, NUL-separated, as they are in the worktree:
# uncommitted edits included, files deleted there left out.
tracked() {
	local f
	git ls-files -z "$@" | while IFS= read -r -d '' f; do
		if [ -e "$f" ]; then printf '%s\0' "$f"; fi
	done
}

# The config fragments of flavour $1 on the selected series, in merge order.
# Where a later fragment sets an option an earlier one set (7.3 has no
# PREEMPT_VOLUNTARY, which Debian's 6.1 and 6.12 use), the fragments are
# replaced by one file of the values in force, written under the cache:
# build-kernel.sh then insists on those only, and the series without
# overrides keep their fragments, and so their cached kernels.
kernel_frags() {
	local f files=() out base=kernel.config
	# The coverage kernel is the debug kernel with gcov.
	[ "$1" = coverage ] && base+=" kernel-debug.config"
	for f in $base "kernel-$1.config" "kernel-$NDK_KERNEL.config"; do
		[ -f "$NDK_VM_DIR/$f" ] && files+=("$NDK_VM_DIR/$f")
	done
	if ! sed -n 's/^\(CONFIG_[A-Za-z0-9_]*\)=.*/\1/p' "${files[@]}" |
		sort | uniq -d | grep -q .; then
		printf '%s\n' "${files[@]}"
		return
	fi
	out=$NDK_CACHE_DIR/fragments/kernel-$NDK_KERNEL-$1.config
	mkdir -p "${out%/*}"
	awk -F= '/^CONFIG_[A-Za-z0-9_]*=/ {
			if (!($1 in val)) order[n++] = $1
			val[$1] = $0
		}
		END { for (i = 0; i < n; i++) print val[order[i]] }' \
		"${files[@]}" >"$out.$$"
	mv "$out.$$" "$out"
	echo "$out"
}

# Cache key of a kernel flavour: source package version, config fragments
# and the build script itself, so any change rebuilds.
kernel_key() {
	local flavour=$1 srcver
	srcver=$(ksrc_version) || exit 1
	# shellcheck disable=SC2046
	cat $(kernel_frags "$flavour") "$NDK_VM_DIR/build-kernel.sh" |
		{ cat; echo "$srcver $flavour"; } | sha256sum | cut -c1-16
}

kernel_dir() {
	echo "$NDK_CACHE_DIR/kernel-$NDK_KERNEL-$1-$(kernel_key "$1")"
}

# The tree of kernel flavour $1, built first if the cache lacks it. One
# kernel build at a time on this host, whichever series or clone asks:
# two side by side share the CPUs and both finish late, while one after
# the other lets the first target boot its VM at once. Targets that need
# the same kernel wait for one build of it (build-kernel.sh's own lock).
kernel_tree() {
	local tree
	tree=$(kernel_dir "$1") || return 1
	if [ ! -f "$tree/.ndk-done" ]; then
		mkdir -p "$NDK_CACHE_DIR"
		(
			flock -n 9 || { log "waiting for another kernel build"; flock 9; } ||
				exit 1
			"$NDK_VM_DIR/build-kernel.sh" "$1" >/dev/null
		) 9>"$NDK_CACHE_DIR/.lock-build" || return 1
	fi
	"$NDK_VM_DIR/build-kernel.sh" "$1"
}

# Directory with checkpatch.pl (and the data files it reads) and kernel-doc:
# the test kernel's scripts/ once that is built, else the same files taken
# from the series' source into build/, which takes seconds, not a kernel build.
kernel_scripts() {
	local tree srcver dir f files=()
	tree=$(kernel_dir debug)
	if [ -f "$tree/.ndk-done" ]; then
		echo "$tree/scripts"
		return
	fi
	srcver=$(ksrc_version) || exit 1
	dir=$NDK_TOP/build/kernel-files-$srcver
	if [ ! -f "$dir/.ndk-done" ]; then
		for f in checkpatch.pl spelling.txt const_structs.checkpatch kernel-doc; do
			files+=("linux-source-$NDK_KERNEL/scripts/$f")
		done
		log "unpacking checkpatch and kernel-doc from $NDK_KSRC_PKG"
		rm -rf "$dir"
		mkdir -p "$dir"
		tar -C "$dir" --strip-components=1 \
			-xJf "$NDK_KSRC_TARBALL" "${files[@]}"
		# 7.3's kernel-doc is a link to a Python script in tools/docs/,
		# which imports its library from tools/lib/python/.
		if [ -L "$dir/scripts/kernel-doc" ]; then
			tar -C "$dir" --strip-components=1 -xJf "$NDK_KSRC_TARBALL" \
				"linux-source-$NDK_KERNEL/tools/docs/kernel-doc" \
				"linux-source-$NDK_KERNEL/tools/lib/python"
		fi
		touch "$dir/.ndk-done"
	fi
	echo "$dir/scripts"
}

# Kernel release of Debian's distribution headers of the series (the
# meta-package depends on exactly one linux-headers-<release> package).
distro_release() {
	dpkg-query -W -f='${Depends}' "$NDK_KHDR_PKG" |
		sed -n 's/^linux-headers-\([^ ,]*\).*/\1/p'
}

# The Debian release whose own kernel of the series distro-check boots
# (NDK_DISTRO: debian12 for 6.1 and 6.12, debian13 for 7.3; Debian 13 ships
# 6.12 too): its codename, the suite that carries the series' kernel and
# the meta-package of its headers.
distro_select() {
	case $NDK_KERNEL in
	7.3) NDK_DISTRO=${NDK_DISTRO:-debian13} ;;
	*) NDK_DISTRO=${NDK_DISTRO:-debian12} ;;
	esac
	NDK_DISTRO_KHDR=linux-headers-amd64
	case $NDK_DISTRO/$NDK_KERNEL in
	debian12/6.1) NDK_DISTRO_CODENAME=bookworm NDK_DISTRO_SUITE=bookworm ;;
	debian12/6.12)
		NDK_DISTRO_CODENAME=bookworm NDK_DISTRO_SUITE=bookworm
		NDK_DISTRO_KHDR=linux-headers-6.12-amd64 ;;
	debian13/6.12) NDK_DISTRO_CODENAME=trixie NDK_DISTRO_SUITE=trixie ;;
	debian13/7.3)
		NDK_DISTRO_CODENAME=trixie NDK_DISTRO_SUITE=trixie-backports ;;
	*) die "NDK_DISTRO=$NDK_DISTRO does not ship Linux $NDK_KERNEL (debian12: 6.1, 6.12; debian13: 6.12, 7.3)" ;;
	esac
	NDK_DISTRO_ROOT=$NDK_CACHE_DIR/root-$NDK_DISTRO
}

# Run "$@" inside the Debian root, in a mount namespace of its own (its
# /proc and /dev go away with the command), with a clean environment.
in_root() {
	unshare -m sh -c 'root=$1; shift
		mount -t proc proc "$root/proc" &&
		mount --rbind /dev "$root/dev" &&
		exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
			chroot "$root" "$@"' sh "$NDK_DISTRO_ROOT" "$@"
}

# Make the Debian root of NDK_DISTRO (distro_select) if the cache has none:
# a minimal system from Debian's archive (debootstrap) with its compiler,
# make and dkms. Modules for that release's kernels are built in it, as
# its users build them, and the host's packages are never touched. The
# caller holds the root's lock.
distro_root() {
	local root=$NDK_DISTRO_ROOT mirror=http://deb.debian.org/debian
	[ -f "$root/.ndk-done" ] && return 0
	install_missing debootstrap
	log "making a Debian $NDK_DISTRO_CODENAME root in $root (minutes)"
	rm -rf "$root"
	debootstrap --variant=minbase "$NDK_DISTRO_CODENAME" "$root" "$mirror" \
		>"$root.log" 2>&1 ||
		{ tail -n 20 "$root.log" >&2; die "debootstrap failed"; }
	cat >"$root/etc/apt/sources.list" <<-EOF
	deb $mirror $NDK_DISTRO_CODENAME main
	deb $mirror $NDK_DISTRO_CODENAME-updates main
	deb $mirror $NDK_DISTRO_CODENAME-backports main
	deb http://deb.debian.org/debian-security $NDK_DISTRO_CODENAME-security main
	EOF
	cp -L /etc/resolv.conf "$root/etc/resolv.conf"
	{
		in_root apt-get update -q &&
		in_root apt-get install -y -q --no-install-recommends make dkms
	} >>"$root.log" 2>&1 ||
		{ tail -n 20 "$root.log" >&2; die "cannot install dkms in $root"; }
	touch "$root/.ndk-done"
}

# Kernel release of the newest headers of the series that the root's
# lists have in NDK_DISTRO_SUITE (with its -security and -updates), read
# from the meta-package's dependencies: the root may hold another
# series' meta-package, so it is not installed.
distro_root_release() {
	local ver
	ver=$(in_root apt-cache madison "$NDK_DISTRO_KHDR" |
		awk -F' *[|] *' -v s="$NDK_DISTRO_SUITE" \
			'$3 ~ " " s "(-security|-updates)?/" { print $2; exit }')
	[ -n "$ver" ] || return 0
	in_root apt-cache show "$NDK_DISTRO_KHDR=$ver" |
		sed -n 's/^Depends: //p' | tr ',' '\n' |
		sed -n 's/^ *linux-headers-\([^ ]*\).*/\1/p' | head -n 1
}

# Install Debian's headers of the series in the root (the lists refreshed
# once if they lack them) and print their kernel release.
distro_root_headers() {
	local root=$NDK_DISTRO_ROOT release
	release=$(distro_root_release)
	if [ -z "$release" ] ||
		! in_root apt-get install -y -q --no-install-recommends \
			"linux-headers-$release" >>"$root.log" 2>&1; then
		in_root apt-get update -q >>"$root.log" 2>&1 ||
			die "apt-get update failed in $root"
		release=$(distro_root_release)
		[ -n "$release" ] ||
			die "no $NDK_DISTRO_KHDR in $NDK_DISTRO_SUITE"
		in_root apt-get install -y -q --no-install-recommends \
			"linux-headers-$release" >>"$root.log" 2>&1 ||
			die "cannot install linux-headers-$release in $root"
	fi
	echo "$release"
}

# Download Debian packages "${@:2}" (name, name=version or name/suite)
# with the Debian root's apt into directory $1 of the host, as every
# package the host does not install is fetched. The caller holds the
# root's lock.
root_download() {
	local dest=$1 tmp=$NDK_DISTRO_ROOT/tmp/ndk-download
	shift
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# apt's _apt user cannot write to a directory root made.
	in_root sh -c 'cd /tmp/ndk-download &&
		apt-get download -q -o APT::Sandbox::User=root "$@"' sh "$@" >&2 &&
		mv "$tmp"/*.deb "$dest/" &&
		rmdir "$tmp"
}

# Debian's kernel image package of release $1, version $2, unpacked (not
# installed) under NDK_CACHE_DIR/distro/, with the .deb files kept beside
# it; depmod has run over its modules. Debian's 7.x image package is empty
# and depends on linux-binary-<release> (the kernel), linux-modules-<release>
# and linux-base-<release> (modules.builtin): those are unpacked too.
# Prints the unpacked tree.
distro_image() {
	local release=$1 version=$2 dir=$NDK_CACHE_DIR/distro pkg pkgs deb
	mkdir -p "$dir"
	if [ ! -f "$dir/$release/.ndk-done" ]; then
		pkgs=linux-image-$release
		pkgs+=" $(in_root apt-cache show "linux-image-$release=$version" |
			sed -n 's/^Depends: //p' | tr ',' '\n' |
			sed -n "s/^ *\(linux-\(base\|binary\|modules\)-$release\) .*/\1/p" |
			tr '\n' ' ')"
		rm -rf "$dir/$release"
		mkdir -p "$dir/$release"
		for pkg in $pkgs; do
			deb=$(compgen -G "$dir/${pkg}_${version//:/%3a}_*.deb" | head -n 1) || true
			if [ -z "$deb" ]; then
				log "downloading $pkg=$version"
				root_download "$dir" "$pkg=$version" ||
					die "cannot download $pkg=$version"
				deb=$(compgen -G "$dir/${pkg}_${version//:/%3a}_*.deb" | head -n 1)
			fi
			dpkg-deb -x "$deb" "$dir/$release" || die "cannot unpack $deb"
		done
		# Debian 13's packages are merged-/usr: modules (and 7.x's
		# kernel) under usr/lib/modules, where /lib is a link to usr/lib.
		[ -e "$dir/$release/lib" ] || ln -s usr/lib "$dir/$release/lib"
		depmod -b "$dir/$release" "$release" ||
			die "depmod failed over $dir/$release"
		touch "$dir/$release/.ndk-done"
	fi
	echo "$dir/$release"
}

# The kernel of unpacked image $1, release $2: in /boot, or (Debian 13's
# 7.x packages) beside its modules.
distro_kernel() {
	local k
	for k in "$1/boot/vmlinuz-$2" "$1/usr/lib/modules/$2/vmlinuz"; do
		[ -f "$k" ] && { echo "$k"; return; }
	done
	die "no kernel in $1"
}

# The module files, in load order, that unpacked image $1 of release $2
# needs to load modules "${@:3}"; built-in ones are left out.
distro_modules() {
	local root=$1 release=$2 m seen=" "
	shift 2
	for m in "$@"; do
		modprobe -d "$root" -S "$release" --show-depends "$m" |
			sed -n 's/^insmod \([^ ]*\).*/\1/p'
	done | while read -r m; do
		case $seen in *" $m "*) continue ;; esac
		seen+="$m "
		echo "$m"
	done
}

# Write module file $1 (.ko, or .ko.xz or .ko.zst as Debian's kernels and
# DKMS compress them) to $2, uncompressed.
unpack_ko() {
	case $1 in
	*.xz) xz -dc "$1" >"$2" ;;
	*.zst) zstd -qdc "$1" >"$2" ;;
	*) cp "$1" "$2" ;;
	esac
}

# Install the ndk-dkms package $1 (tools/deb.sh) with apt in the Debian
# root, which has the headers of release $2 (distro_root_headers), and
# judge what its DKMS did for $2: ndk.ko, ndk_wdk.ko, ndk_selftest.ko and
# ndk_nvmeof.ko built, nothing else, without a warning (Debian's headers
# are built for as users build), and installed. dkms.log, make.log and the modules,
# uncompressed (ndk/*.ko), go to $3. The caller holds the root's lock and
# calls root_dkms_purge, also on failure.
root_dkms_install() {
	local deb=$1 release=$2 out=$3 m f makelog built
	local dest=$NDK_DISTRO_ROOT/lib/modules/$release/updates/dkms
	cp "$deb" "$NDK_DISTRO_ROOT/tmp/${deb##*/}"
	log "apt install ${deb##*/} in the $NDK_DISTRO_CODENAME root"
	in_root apt-get install -y -q "/tmp/${deb##*/}" >"$out/dkms.log" 2>&1 ||
		{ cat "$out/dkms.log" >&2; die "installing ndk-dkms failed"; }
	makelog=$(compgen -G "$NDK_DISTRO_ROOT/var/lib/dkms/ndk/*/$release/*/log/make.log" |
		head -n 1) ||
		{ cat "$out/dkms.log" >&2; die "DKMS kept no make.log for $release"; }
	cp "$makelog" "$out/make.log"
	! grep -E 'warning:|error:' "$out/make.log" >&2 ||
		die "the DKMS build against $release warned ($out/make.log)"
	# Kbuild names them under DKMS's build directory, from 6.13 relative
	# to it.
	built=$(sed -n 's|.*LD \[M\] *\(.*\)\.ko$|\1|p' "$out/make.log" |
		sed 's|.*/build/||' | sort | tr '\n' ' ')
	[ "$built" = "ndk/ndk samples/ndk_nvmeof/ndk_nvmeof tests/selftest/ndk_selftest wdk/ndk_wdk " ] ||
		die "DKMS built '$built', not ndk, ndk_wdk, ndk_selftest and ndk_nvmeof"
	mkdir -p "$out/ndk"
	for m in ndk ndk_wdk ndk_selftest ndk_nvmeof; do
		f=$(compgen -G "$dest/$m.ko*" | head -n 1) ||
			die "DKMS did not install $m.ko for $release"
		unpack_ko "$f" "$out/ndk/$m.ko"
	done
}

# Where root_dkms_consumer builds, in the root.
NDK_ROOT_CONSUMER=/tmp/ndk-consumer

# A consumer module built on its own against the ndk-dkms package that
# root_dkms_install installed for release $1 (log in $2/consumer.log):
# samples/ndk_demo, with the package's headers in /usr/src and the
# Module.symvers DKMS keeps, as a consumer's author builds one.
root_dkms_consumer() {
	local release=$1 out=$2 ver symvers consumer=$NDK_ROOT_CONSUMER
	ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$NDK_TOP/dkms.conf")
	[ -n "$ver" ] || die "no PACKAGE_VERSION in dkms.conf"
	symvers=$(compgen -G "$NDK_DISTRO_ROOT/var/lib/dkms/ndk/$ver/$release/*/Module.symvers" |
		head -n 1) || die "DKMS kept no Module.symvers for $release"
	log "building samples/ndk_demo as a separate consumer module"
	rm -rf "$NDK_DISTRO_ROOT$consumer"
	mkdir -p "$NDK_DISTRO_ROOT$consumer"
	cp "$NDK_TOP/samples/ndk_demo/ndk_demo.c" "$NDK_DISTRO_ROOT$consumer/"
	printf '%s\n' "ccflags-y += -I/usr/src/ndk-$ver/include" \
		'obj-m += ndk_demo.o' >"$NDK_DISTRO_ROOT$consumer/Kbuild"
	in_root make -C "/usr/src/linux-headers-$release" M="$consumer" \
		KBUILD_EXTRA_SYMBOLS="${symvers#"$NDK_DISTRO_ROOT"}" modules \
		>"$out/consumer.log" 2>&1 ||
		{ cat "$out/consumer.log" >&2; die "consumer build failed"; }
	! grep -E 'warning:|error:' "$out/consumer.log" >&2 ||
		die "the consumer build has warnings"
	in_root modinfo -F depends "$consumer/ndk_demo.ko" | grep -qw ndk ||
		die "the consumer does not depend on ndk"
	rm -rf "$NDK_DISTRO_ROOT$consumer"
}

# Purge ndk-dkms from the Debian root (its DKMS removes the modules of
# every kernel) and check that nothing of it is left; the apt log is
# appended to $1/dkms.log.
root_dkms_purge() {
	local out=$1 f
	in_root apt-get purge -y -q ndk-dkms >>"$out/dkms.log" 2>&1 || true
	rm -f "$NDK_DISTRO_ROOT"/tmp/ndk-dkms_*.deb
	rm -rf "$NDK_DISTRO_ROOT$NDK_ROOT_CONSUMER"
	for f in "$NDK_DISTRO_ROOT"/usr/src/ndk-* "$NDK_DISTRO_ROOT/var/lib/dkms/ndk" \
		"$NDK_DISTRO_ROOT"/lib/modules/*/updates/dkms/ndk*.ko*; do
		[ ! -e "$f" ] || die "${f#"$NDK_DISTRO_ROOT"} is left behind in the root"
	done
}

# W=1 build of ndk's modules against kernel tree $1, logged in $2. It runs
# in a copy of the tree kept per kernel tree under the cache, so that a
# new clone compiles only the files that differ from the last build
# against that kernel: in the clone itself every file is newer than any
# object and kbuild compiles them all (a minute or more a series). Only
# files that differ are copied, so the others keep their older times; the
# modules are then copied into the tree. A build that fails or warns
# removes the copy, so that an object kept was always compiled without a
# warning and a warning is never hidden by a file left uncompiled. The
# copy goes too when its kernel tree was built again (its .ndk-done is
# another file then), and copies of trees the cache no longer has are
# deleted. (Not in build-kernel.sh: its text is part of the kernels' key.)
# A tree that is no git work tree, and make coverage (gcov's notes name
# the sources where they were compiled), build in the tree itself.
build_modules() {
	local ktree=$1 log=$2 stage stamp rc=0 m
	if [ "${NDK_COVERAGE:-0}" = 1 ] ||
	   ! git -C "$NDK_TOP" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		make -j"$(nproc)" -C "$NDK_TOP" KDIR="$ktree" W=1 modules >"$log" 2>&1
		return
	fi
	stage=$NDK_CACHE_DIR/objs/${ktree##*/}
	mkdir -p "${stage%/*}"
	for m in "${stage%/*}"/kernel-*.lock; do
		[ -d "$NDK_CACHE_DIR/$(basename "$m" .lock)" ] ||
			rm -rf "${m%.lock}" "$m"
	done
	(
		flock 9 || exit 1
		stamp=$(stat -c %i.%Y "$ktree/.ndk-done") || exit 1
		[ "$(cat "$stage/.ndk-kernel" 2>/dev/null)" = "$stamp" ] ||
			rm -rf "$stage"
		mkdir -p "$stage"
		echo "$stamp" >"$stage/.ndk-kernel"
		git -C "$NDK_TOP" ls-files -co --exclude-standard | sort >"$stage.files"
		# Files the tree no longer has leave the copy too.
		[ ! -f "$stage/.ndk-files" ] ||
			comm -23 "$stage/.ndk-files" "$stage.files" |
			while read -r m; do rm -f "$stage/$m"; done
		while read -r m; do
			[ -f "$NDK_TOP/$m" ] || continue
			cmp -s "$NDK_TOP/$m" "$stage/$m" && continue
			mkdir -p "$stage/$(dirname "$m")" &&
				cp "$NDK_TOP/$m" "$stage/$m" || exit 1
		done <"$stage.files"
		mv "$stage.files" "$stage/.ndk-files"
		make -j"$(nproc)" -C "$stage" KDIR="$ktree" W=1 modules >"$log" 2>&1 ||
			rc=$?
		if [ "$rc" != 0 ] || grep -qE 'warning:|error:' "$log"; then
			rm -rf "$stage"
			exit "$rc"
		fi
		# modules.order names each module's object (6.2 on) or the
		# module itself (6.1), by its path in the copy.
		for m in $(sed "s|^$stage/||; s/\\.o\$/.ko/" "$stage/modules.order") \
			Module.symvers; do
			cp "$stage/$m" "$NDK_TOP/$m" || exit 1
		done
	) 9>"$stage.lock"
}

# Install what is missing, build (or reuse) the kernel of flavour $2
# (default debug) and build ndk's modules against it, warning-free; log
# in $1/build.log. Prints the kernel tree.
build_for_vm() {
	local outdir=$1 flavour=${2:-debug} ktree
	# Callers run this in $(...), where set -e does not reach: every
	# step's failure is tested.
	"$NDK_VM_DIR/install-deps.sh" || die "installing what the VMs need failed"
	ktree=$(kernel_tree "$flavour") ||
		die "building the $flavour kernel failed"
	log "building ndk against $ktree"
	build_modules "$ktree" "$outdir/build.log" ||
		{ cat "$outdir/build.log" >&2; die "module build failed"; }
	if grep -E 'warning:|error:' "$outdir/build.log" >&2; then
		die "module build has warnings"
	fi
	echo "$ktree"
}

# Boot kernel tree $1 with initramfs $2/initramfs.cpio.gz, command line
# $3 and $5 of memory under TCG (or NDK_QEMU_ACCEL), user networking, for
# at most $4 seconds; the console goes to $2/console.log; the rest are more
# of QEMU's options. Returns QEMU's (or timeout's) status.
boot_vm() {
	local ktree=$1 outdir=$2 append=$3 limit=$4 mem=$5
	shift 5
	run_vm "$outdir/console.log" "$ktree" "$outdir/initramfs.cpio.gz" \
		"$append" "$limit" "$mem" -netdev user,id=n0,restrict=on \
		-device virtio-net-pci,netdev=n0 "$@"
}

# What the command line of test kernel tree $1 needs, with a leading space.
# Tasks RCU of 6.1 waits for callbacks holding tasks_gp_mutex (later
# kernels drop it while they wait). PROVE_RCU's boot self-test calls
# synchronize_rcu_tasks() as the grace-period kthread starts; when
# voluntary preemption lets the kthread take the mutex first, nothing
# ever queues the callback it waits for and init waits on the mutex for
# ever: the guest stops after "Running RCU-tasks wait API self tests"
# (1 boot in 3 or 4 here). Such a kernel boots without preemption points
# and switches to voluntary preemption before the tests (guest.sh).
boot_quirks() {
	local tree=$1
	grep -qx CONFIG_PROVE_RCU=y "$tree/.config" || return 0
	grep -qx CONFIG_PREEMPT_DYNAMIC=y "$tree/.config" || return 0
	grep -A12 '^static void rcu_tasks_one_gp' "$tree/kernel/rcu/tasks.h" |
		grep -q 'mutex_unlock(&rtp->tasks_gp_mutex)' && return 0
	echo " preempt=none ndk_preempt=voluntary"
}

# Boot kernel tree $2 (or kernel image file $2) with initramfs $3 and
# command line $4 for at most $5 seconds with $6 of memory, console to file
# $1; the rest are QEMU's network and other options. NDK_QEMU_CPU replaces
# the CPU model (max without 5-level paging).
# Returns QEMU's (or timeout's) status.
#
# la57=off: every series enables interrupts before identify_boot_cpu(),
# which clears the boot CPU's feature bits while it reads them again.
# An interrupt in that window sees no LA57, so KASAN takes the 5-level
# direct map for a wild address: "BUG: KASAN: wild-memory-access in
# do_raw_spin_lock" under handle_edge_irq, 0.005 s into a 6.1 boot (3
# boots in 109 here), after which lock debugging is off for the whole run.
# With 4-level paging, as on most hosts, the window is harmless.
#
# acpi=noirq: the PCI interrupt routing method of QEMU's i440fx (_PRT, an
# AML loop over 128 entries) runs into ACPI's 30 s loop timeout under TCG
# with the debug kernel, which cost every boot about 40 s and, on a busy
# host, a soft-lockup splat. Nothing here needs it: virtio uses MSI-X.
run_vm() {
	local console=$1 kernel=$2 initrd=$3 append=$4 limit=$5 mem=$6
	shift 6
	if [ ! -f "$kernel" ]; then
		append+=$(boot_quirks "$kernel")
		kernel=$kernel/arch/x86/boot/bzImage
	fi
	timeout "$limit" qemu-system-x86_64 \
		-accel "${NDK_QEMU_ACCEL:-tcg}" -cpu "${NDK_QEMU_CPU:-max,la57=off}" \
		-smp "$NDK_VM_CPUS" -m "$mem" -kernel "$kernel" \
		-initrd "$initrd" -append "$append acpi=noirq" "$@" \
		-nographic -no-reboot -monitor none -serial stdio \
		</dev/null >"$console" 2>&1
}

# The two VMs of check-cross and distro-check, joined by a QEMU socket
# network on the host's loopback interface: the server VM's QEMU listens
# on the wire, the client VM's connects. Boots kernel (tree or image) $2
# with initramfs $3 and command line $4 plus "$5.role=server|client" for
# at most $6 seconds each; the consoles go to $1/server.log and
# $1/client.log. Sets pair_server_rc and pair_client_rc to each QEMU's
# (or timeout's) status. An EXIT trap of the caller calls stop_pair.
pair_pids=''
boot_pair() {
	local out=$1 kernel=$2 initrd=$3 append=$4 prefix=$5 limit=$6
	local attempt port='' server='' client='' _
	pair_vm() {
		run_vm "$out/$1.log" "$kernel" "$initrd" "$append $prefix.role=$1" \
			"$limit" "$test_vm_mem" -netdev "socket,id=n0,$3=127.0.0.1:$port" \
			-device "virtio-net-pci,netdev=n0,mac=$2"
	}
	# Connecting to probe would make the probe the wire's other end: look.
	listening() { ss -Hltn "sport = :$port" | grep -q .; }
	# A free port, taken by the server VM's QEMU a moment later; should
	# someone else take it first, that QEMU fails and we try another.
	for attempt in 1 2 3; do
		port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		log "booting the server VM (${NDK_QEMU_ACCEL:-tcg}), wire on port $port"
		pair_vm server 52:54:00:77:00:01 listen &
		server=$!
		pair_pids=$server
		for _ in $(seq 100); do
			listening && break
			kill -0 "$server" 2>/dev/null || break
			sleep 0.1
		done
		listening && break
		stop_pair
		wait "$server" || true
		server=''
		log "the server VM's QEMU does not listen on port $port (attempt $attempt)"
	done
	[ -n "$server" ] || die "cannot start the server VM; see $out/server.log"
	log "booting the client VM"
	pair_vm client 52:54:00:77:00:02 connect &
	client=$!
	pair_pids="$server $client"
	pair_server_rc=0 pair_client_rc=0
	wait "$server" || pair_server_rc=$?
	wait "$client" || pair_client_rc=$?
	pair_pids=''
	[ "$pair_server_rc" = 124 ] && log "the server VM timed out"
	[ "$pair_client_rc" = 124 ] && log "the client VM timed out"
	return 0
}

# End the VMs of boot_pair, on an early exit, through the timeout(1) each
# one runs under, which passes the signal on to QEMU.
stop_pair() {
	local pid
	for pid in $pair_pids; do
		pkill -TERM -P "$pid" 2>/dev/null || true
	done
}
