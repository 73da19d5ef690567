#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/vm/guest.sh - runs inside the test guest as portlogd-vmtest.service (installed by
# run.sh as /usr/local/sbin/portlogd-vmtest). It installs the package with dpkg (its
# postinst enables and starts the service with the shipped config) and records the
# result, stops the service, puts the test's config (and a PORTLOGD_VM_BREAK drop-in)
# in place, says "VMTEST MARK" on the control port /dev/ttyS2 and waits for the host's
# "GO" (the host notes what its parallel port's file holds before the daemon strobes),
# starts it again, waits for it to be active, says "VMTEST READY", then obeys the
# host's line commands there, answering each with one "VMTEST <CMD> ..." line:
#   ROTATE    logrotate -f /etc/logrotate.d/portlogd (the shipped file, as cron would)
#   COLLECT   the service's state while it runs, into /var/tmp/vmtest/: also the
#             ports' interrupt lines and every interrupt thread's policy and priority
#             (/proc/PID/stat), and portlogd --check-system
#   WATCHDOG  SIGSTOP the daemon; wait for systemd to kill and restart it and for the
#             new daemon to log; record how long that took
#   DONE      the journal, stop the service (its last STAT lines), copy the logs
#   PACKAGE   the user's "systemctl enable --now", then upgrade (dpkg -i of a higher
#             version), remove and purge the package, recording the service's state
#             after each; power off
#   POWEROFF  power off (a run without PACKAGE)
# and those of the optional scenarios (run.sh):
#   TRIAL ID BAUD TRIG USER NAME[,NAME...] [KEY=VALUE...]  the service stopped; the
#             daemon run with -f and its default config (log in /var/tmp/vmtest/trials/ID/)
#             on the ports NAME (ttyS1, ttyS4..7, usb0: the USB adapter's
#             /dev/serial/by-id/ link) at BAUD, and KEY = VALUE in each port's section
#             (rx_trigger=keep), as USER: root; service (the installed unit as it is,
#             its user and sandbox; the log in /var/log/portlogd, copied at TRIALEND); or
#             another user, e.g. nobody (in group dialout with the unit's capabilities,
#             unable to write sysfs); rx_trig_bytes set to TRIG first (-: left as it is);
#             answered once every port's EV open is in the log, with the first one's
#             gap_us= (the gap the daemon resolves there)
#   TRIALEND ID [NAME=BYTES...]  that daemon stopped (SIGTERM) once each UART port's
#             receive count (/proc/tty/driver/serial rx:) has grown by the BYTES the host
#             wrote into it (50 ms looks, 200 at most; the daemon takes at its stop all the
#             kernel holds); a port without that count (usb0) after a second
#   USBDEV present|absent  waits up to 30 s for the USB adapter to be so; says its tty,
#             by-id link, driver and latency_timer
#   RESTARTS begin|end  SERVICE restarts 9600 / the log and journal copied to
#             /var/tmp/vmtest/restarts
#   RESTART KIND  restart, reload, stopstart (stop, then start), upgrade (dpkg -i of a
#             higher version), watchdog (SIGSTOP), kill9 (SIGKILL: Restart=on-failure);
#             answered once the new daemon has logged its EV open of line1, with the
#             descriptors in systemd's store before and after (NFileDescriptorStore)
#   SERVICE NAME BAUD [usb]  the service restarted on the test's config with line1 at
#             BAUD, from an empty log (the logs there moved to /var/tmp/vmtest/NAME/before);
#             usb: with the USB adapter too, as port usb0 by its /dev/serial/by-id/ link
#   PROC      the service's main PID, its open descriptors and threads, NRestarts, and
#             usb0's EV open and close lines so far
#   USBOPENS N  waits up to 30 s for usb0's N-th EV open in the log, then says PROC's
#             figures and the adapter's latency_timer
#   COPYLOG NAME  the service stopped, its log, journal and the kernel's ext4 messages
#             copied to /var/tmp/vmtest/NAME
#   CALIBRATE ID PORT BAUD TRIG  the service stopped, PORT's rx_trig_bytes set to TRIG
#             (-: left as it is), portlogd --calibrate PORT --baud BAUD (PORT: ttyS1, or
#             usb0: the USB adapter's by-id link) through the host's loopback (vm_echo);
#             its printout in /var/tmp/vmtest/calibrate-ID.txt; answered with its exit, the
#             level and its delivery = line
#   APPARMOR  the service stopped; the AppArmor profile's state and the kernel log's
#             DENIED lines for portlogd so far (apparmor.txt, apparmor-denied.txt); then
#             what it must deny, each with its exit status and message, and the kernel
#             log's new DENIED lines (apparmor-test.txt): a shell executed under the
#             profile (aa-exec), /etc/shadow read by --export, the daemon started by path
#             (no aa-exec) with its log in /var/lib; and --export of the service's log,
#             which it must allow
#   RTLOAD ID OFF:LEN...  a SCHED_FIFO 50 busy loop on every CPU (chrt, taskset; bash,
#             which spins without a fork), all spinning at once LEN ms from OFF ms after
#             the start, idle between; answered when the last burst ended, with the CPUs,
#             the bursts, their sum and the kernel's RT throttling (sched_rt_runtime_us)
#   IRQCPU NAME CPUS  the interrupt of tty NAME to CPUS (smp_affinity_list); answered with
#             the line, the write's status, the affinity after and the line's interrupts
#             so far on each CPU (/proc/interrupts: counts=CPU0,CPU1,...)
# A boot of an image that has booted before (powercut: the same image booted again after
# QEMU was killed) installs nothing: the service starts at boot with the config there;
# the guest says "VMTEST REBOOT", then READY, and obeys the same commands.
# The host reads /var/tmp/vmtest from the image afterwards (debugfs rdump).
# Nothing here judges: the host checks what is collected (vm_check, vm_wire).
out=/var/tmp/vmtest
pkg=/var/tmp/vmtest-pkg
ctl=/dev/ttyS2
log=/var/log/portlogd/portlogd.log
link=/etc/systemd/system/multi-user.target.wants/portlogd.service
mkdir -p "$out"
exec >>"$out/guest.log" 2>&1
set -x

stty -F "$ctl" 115200 raw -echo -echoe -echok -echoctl -echoke -ixon -ixoff
exec 3<>"$ctl"

say() {
	printf 'VMTEST %s\n' "$*" >&3
	printf 'VMTEST %s\n' "$*" >/dev/ttyS0
}

now() { date +%s.%N; }
# seconds (3 decimals) from $1 to now
since() { echo "$1 $(now)" | awk '{ printf "%.3f", $2 - $1 }'; }

show() {
	systemctl show portlogd.service -p ActiveState -p SubState -p Result -p NRestarts \
		-p MainPID -p StatusText -p WatchdogUSec -p ExecMainStatus -p User
}

collect() {
	pid=$(systemctl show -P MainPID portlogd.service)
	show >"$out/show.txt"
	systemd-detect-virt >"$out/virt.txt" 2>&1
	{ uname -r; uname -v; nproc; } >"$out/uname.txt"
	# one line per thread: TID NAME POLICY PRIORITY, from chrt (and /proc for the name)
	: >"$out/threads.txt"
	for t in /proc/"$pid"/task/*; do
		tid=${t##*/}
		pol=$(chrt -p "$tid" | sed -n 's/.*scheduling policy: //p')
		prio=$(chrt -p "$tid" | sed -n 's/.*scheduling priority: //p')
		echo "$tid $(cat "$t/comm") $pol $prio" >>"$out/threads.txt"
	done
	ps -L -o tid,cls,rtprio,psr,comm -p "$pid" >"$out/ps.txt"
	# its AppArmor label: "/usr/sbin/portlogd (enforce)" where the profile is loaded
	cat /proc/"$pid"/attr/current >"$out/aa-label.txt" 2>&1
	# who it runs as: user, group, supplementary groups; and its capabilities
	echo "$(ps -o user= -p "$pid") $(ps -o group= -p "$pid") $(ps -o supgrp= -p "$pid")" \
		>"$out/user.txt"
	grep -E '^(Uid|Gid|Groups|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/"$pid"/status >>"$out/user.txt"
	# online: systemd's view of the running unit
	systemd-analyze security portlogd.service --no-pager >"$out/security.txt" 2>&1
	# the parallel port's status register read here without libieee1284: inb(0x379)
	# through /dev/port (0x379 = 889)
	dd if=/dev/port bs=1 skip=889 count=1 2>/dev/null | od -An -tx1 | tr -d ' \n' \
		>"$out/status_reg.txt"
	ls -l /dev/ttyS1 /dev/parport0 /dev/cpu_dma_latency >"$out/devices.txt" 2>&1
	lsmod | grep -E 'ppdev|parport' >>"$out/devices.txt"
	cat /proc/tty/driver/serial >"$out/uart.txt" 2>&1
	# the ports' interrupt lines and every interrupt thread "irq/N-NAME": PID COMM POLICY
	# RT_PRIORITY, from /proc/PID/stat (fields 41 and 40, counted after the comm's ")")
	{
		echo "tty_irq=$(cat /sys/class/tty/ttyS1/irq 2>&1)"
		echo "parport_irq=$(cat /proc/sys/dev/parport/parport0/irq 2>&1)"
		for c in $(grep -l '^irq/' /proc/[0-9]*/comm 2>/dev/null); do
			d=${c%/comm}
			echo "thread ${d#/proc/} $(cat "$c") $(sed 's/.*) //' "$d/stat" | awk '{ print $39, $38 }')"
		done
	} >"$out/irq.txt"
	cat /proc/interrupts >"$out/interrupts.txt"
	# what --check-system says of this machine, the running kernel and the test's config
	portlogd --check-system >"$out/checksys.txt" 2>&1
	echo "exit=$?" >>"$out/checksys.txt"
}

watchdog() {
	ws=$(systemctl show -P WatchdogUSec portlogd.service)
	case $ws in *min*) ws=600 ;; *ms) ws=1 ;; *s) ws=${ws%s} ;; *) ws=10 ;; esac
	pid=$(systemctl show -P MainPID portlogd.service)
	n0=$(systemctl show -P NRestarts portlogd.service)
	starts0=$(grep -c ' portlogd EV start ' "$log")
	t0=$(now)
	kill -STOP "$pid"
	restart_s= logged_s= newpid=
	end=$(($(date +%s) + ws * 3))
	while [ "$(date +%s)" -lt $end ]; do
		sleep 0.2
		n=$(systemctl show -P NRestarts portlogd.service)
		state=$(systemctl is-active portlogd.service)
		if [ -z "$restart_s" ] && [ "$n" != "$n0" ] && [ "$state" = active ]; then
			restart_s=$(since "$t0")
			newpid=$(systemctl show -P MainPID portlogd.service)
		fi
		if [ -z "$logged_s" ] && [ "$(grep -c ' portlogd EV start ' "$log")" -gt "$starts0" ]; then
			logged_s=$(since "$t0")
		fi
		[ -n "$restart_s" ] && [ -n "$logged_s" ] && break
	done
	{
		echo "watchdog_sec=$ws"
		echo "stopped_pid=$pid"
		echo "new_pid=$newpid"
		echo "nrestarts_before=$n0"
		echo "nrestarts=$(systemctl show -P NRestarts portlogd.service)"
		echo "restart_s=$restart_s"
		echo "logged_s=$logged_s"
		echo "waited_s=$(since "$t0")"
	} >"$out/watchdog.txt"
	show >"$out/show-after.txt"
}

# exists PATH: present or absent
exists() { if [ -e "$1" ] || [ -L "$1" ]; then echo present; else echo absent; fi; }

# KEY=VALUE lines of the service's state after a package step; $1 the key prefix
state() {
	echo "${1}_active=$(systemctl is-active portlogd.service)"
	echo "${1}_enabled=$(systemctl is-enabled portlogd.service 2>&1)"
	echo "${1}_mainpid=$(systemctl show -P MainPID portlogd.service)"
	echo "${1}_start=$(systemctl show -P ExecMainStartTimestampMonotonic portlogd.service)"
	echo "${1}_status=$(dpkg-query -W -f '${db:Status-Abbrev}' portlogd 2>/dev/null | tr -d ' ')"
	echo "${1}_version=$(dpkg-query -W -f '${Version}' portlogd 2>/dev/null)"
	echo "${1}_logdir=$(exists /var/log/portlogd)"
	echo "${1}_logs=$(ls /var/log/portlogd 2>/dev/null | wc -l)"
	echo "${1}_link=$(exists "$link")"
	echo "${1}_etc=$(exists /etc/portlogd)"
	echo "${1}_user=$(getent passwd portlogd >/dev/null && echo present || echo absent)"
}

# dpkg_step STEP ARGS...: one dpkg run, timed, its output in dpkg-STEP.log
dpkg_step() {
	step=$1
	shift
	t0=$(now)
	dpkg "$@" >"$out/dpkg-$step.log" 2>&1 </dev/null
	echo "${step}_rc=$?"
	echo "${step}_s=$(since "$t0")"
}

# wait_active: gives the service 120 s to become active (READY=1): its start timeout is
# 90 s and a guest under TCG is slow; says READY, or NOTREADY with what there is and
# powers off
wait_active() {
	t0=$(now)
	end=$(($(date +%s) + 120))
	until [ "$(systemctl is-active portlogd.service)" = active ] || [ "$(date +%s)" -ge $end ]; do
		sleep 0.5
	done
	echo "active_s=$(since "$t0")" >"$out/ready.txt"
	if [ "$(systemctl is-active portlogd.service)" = active ]; then
		say "READY $(cat /proc/uptime | cut -d' ' -f1)"
	else
		# say why, keep what there is, and stop: the host reports it
		show >"$out/show.txt"
		journalctl -u portlogd.service -o short-iso --no-pager >"$out/journal.txt" 2>&1
		cp -a /var/log/portlogd "$out/log" 2>/dev/null
		say "NOTREADY $(systemctl show -P ActiveState portlogd.service)/$(systemctl show -P SubState portlogd.service)"
		sync
		systemctl poweroff
		exit 0
	fi
}

# trial ID BAUD TRIG USER NAMES [KEY=VALUE...]: see TRIAL above
trial() {
	id=$1 keys=""
	for kv in $(echo "$*" | cut -d' ' -f6-); do keys="$keys${kv%%=*} = ${kv#*=}\n"; done
	d=$out/trials/$id
	mkdir -p "$d"
	systemctl stop portlogd.service
	printf '# a run of tests/vm/run.sh: the default config but the ports\n[logger]\nlog_file = %s\n' \
		"$d/portlogd.log" >"$d/portlogd.conf"
	: >"$d/info.txt"
	for n in $(echo "$5" | tr ',' ' '); do
		case $n in
		usb0) dev=$(ls -d /dev/serial/by-id/* 2>/dev/null | head -1) ;;
		*) dev=/dev/$n ;;
		esac
		tty=$(basename "$(readlink -f "$dev")")
		printf "\n[serial %s]\ndevice = %s\nbaud = %s\n$keys" "$n" "$dev" "$2" >>"$d/portlogd.conf"
		# set before the traffic: writing it clears the UART's FIFOs
		f=/sys/class/tty/$tty/rx_trig_bytes
		before=$(cat "$f" 2>/dev/null || echo none)
		[ "$3" = - ] || [ ! -e "$f" ] || echo "$3" >"$f"
		echo "$n trig=$(cat "$f" 2>/dev/null || echo none) before=$before device=$dev tty=$tty" \
			"irq=$(cat "/sys/class/tty/$tty/irq" 2>/dev/null)" >>"$d/info.txt"
	done
	cat /proc/tty/driver/serial >"$d/uart-before.txt" 2>&1
	tlog=$d/portlogd.log
	case $4 in
	root)
		portlogd -f -c "$d/portlogd.conf" 2>"$d/stderr.txt" &
		trial_pid=$! ;;
	service)
		# the installed unit as it is (its user, capabilities, sandbox), this config
		tlog=/var/log/portlogd/trial-$id.log
		sed "s|^log_file = .*|log_file = $tlog|" "$d/portlogd.conf" >/etc/portlogd/portlogd.conf
		systemctl start portlogd.service 2>"$d/stderr.txt"
		trial_pid=$(systemctl show -P MainPID portlogd.service) ;;
	*)
		chown "$4" "$d"
		setpriv --reuid="$4" --regid=nogroup --groups="$(getent group dialout | cut -d: -f3)" \
			--inh-caps=+sys_nice,+ipc_lock --ambient-caps=+sys_nice,+ipc_lock \
			portlogd -f -c "$d/portlogd.conf" 2>"$d/stderr.txt" &
		trial_pid=$! ;;
	esac
	# ready: every port's EV open in the log (the flusher writes every 100 ms)
	want=$(echo "$5" | tr ',' '\n' | wc -l)
	end=$(($(date +%s) + 60))
	until [ "$(grep -c ' EV open ' "$tlog" 2>/dev/null)" -ge "$want" ] ||
		[ "$(date +%s)" -ge $end ] || ! kill -0 "$trial_pid" 2>/dev/null; do
		sleep 0.2
	done
	if [ "$(grep -c ' EV open ' "$tlog" 2>/dev/null)" -ge "$want" ]; then
		say "TRIAL $id ready $(grep -m1 ' EV open ' "$tlog" | grep -o ' gap_us=[0-9]*')" \
			"$(tr '\n' ' ' <"$d/info.txt")"
	else
		[ "$4" != service ] || journalctl -u portlogd.service -n 20 --no-pager >>"$d/stderr.txt" 2>&1
		say "TRIAL $id failed: $(tail -3 "$d/stderr.txt" | tr '\n' ' ')"
	fi
}

# the kernel log's AppArmor denials of the profile /usr/sbin/portlogd
aa_denied() { dmesg | grep 'apparmor="DENIED"' | grep 'profile="/usr/sbin/portlogd"'; }

# APPARMOR: see above. Each denial case says rc= and its message; the host judges.
apparmor_test() {
	f=$out/apparmor.txt t=$out/apparmor-test.txt
	aa_denied >"$out/apparmor-denied.txt"
	# the ports free for the daemon started below (after restarts the service holds
	# them: its sampler and a second one's PPCLAIM on parport0 block each other)
	systemctl stop portlogd.service
	{
		echo "enabled=$(cat /sys/module/apparmor/parameters/enabled 2>&1)"
		echo "mode=$(sed -n 's|^/usr/sbin/portlogd (\(.*\))$|\1|p' /sys/kernel/security/apparmor/profiles)"
		echo "service_label=$(cat "$out/aa-label.txt" 2>/dev/null | tr -d '\0')"
		echo "denied_before=$(wc -l <"$out/apparmor-denied.txt")"
		# audit lines the kernel dropped (printk's rate limit): a denial could hide there
		echo "audit_dropped=$(dmesg | grep -Ec 'printk limit exceeded|audit_lost=')"
	} >"$f"
	n0=$(wc -l <"$out/apparmor-denied.txt")
	{
		# aa-exec's own exec enters the profile; the shell there then executes another
		echo "--- exec_sh: aa-exec -p /usr/sbin/portlogd -- /bin/sh -c 'exec /bin/sh -c \"echo escaped\"'"
		aa-exec -p /usr/sbin/portlogd -- /bin/sh -c 'exec /bin/sh -c "echo escaped"' 2>&1
		echo "rc=$?"
		echo "--- shadow: aa-exec -p /usr/sbin/portlogd -- portlogd --export pcapng -o /dev/null /etc/shadow"
		aa-exec -p /usr/sbin/portlogd -- portlogd --export pcapng -o /dev/null /etc/shadow 2>&1
		echo "rc=$?"
		echo "--- logdir: portlogd -f with log_file = /var/lib/portlogd-denied.log (attached by path)"
		sed 's|^log_file = .*|log_file = /var/lib/portlogd-denied.log|' \
			/etc/portlogd/portlogd.conf >/etc/portlogd/denied.conf
		timeout 60 portlogd -f -c /etc/portlogd/denied.conf >"$t.out" 2>&1
		rc=$?
		tail -3 "$t.out"
		echo "rc=$rc exists=$([ -e /var/lib/portlogd-denied.log ] && echo yes || echo no)"
		rm -f /etc/portlogd/denied.conf
		echo "--- allowed: aa-exec -p /usr/sbin/portlogd -- portlogd --export pcapng -o /var/log/portlogd/aa.pcapng of the service's log"
		aa-exec -p /usr/sbin/portlogd -- portlogd --export pcapng \
			-o /var/log/portlogd/aa.pcapng /var/log/portlogd/portlogd.log >"$t.out" 2>&1
		rc=$?
		tail -2 "$t.out"
		echo "rc=$rc size=$(stat -c %s /var/log/portlogd/aa.pcapng 2>/dev/null)"
		rm -f /var/log/portlogd/aa.pcapng "$t.out"
		echo "--- the kernel log's new DENIED lines"
		aa_denied | tail -n +$((n0 + 1))
	} >"$t" 2>&1
	for k in exec_sh shadow logdir allowed; do
		echo "$k $(sed -n "/^--- $k:/,/^rc=/p" "$t" | sed -n 's/^rc=//p')"
	done >>"$f"
	echo "denied_test=$(($(aa_denied | wc -l) - n0))" >>"$f"
	echo "audit_dropped_after=$(dmesg | grep -Ec 'printk limit exceeded|audit_lost=')" >>"$f"
}

# rx_of N FILE: rx= the receive count of ttySN in FILE (/proc/tty/driver/serial's form), 0
# if none; the shell's builtins only (a fork costs a tenth of a second in a guest under TCG)
rx_of() {
	rx=0
	while read -r line; do
		case $line in "$1: "*" rx:"*) rx=${line#* rx:} rx=${rx%% *}; return ;; esac
	done <"$2"
}

trialend() {
	id=$1 waits=0
	shift
	for kv in "$@"; do
		case ${kv%%=*} in
		ttyS*)
			n=${kv%%=*} n=${n#ttyS}
			rx_of "$n" "$out/trials/$id/uart-before.txt"
			want=$((rx + ${kv#*=}))
			rx_of "$n" /proc/tty/driver/serial
			while [ "$rx" -lt "$want" ] && [ $waits -lt 200 ]; do
				sleep 0.05
				waits=$((waits + 1))
				rx_of "$n" /proc/tty/driver/serial
			done ;;
		*) sleep 1 ;;
		esac
	done
	set -- "$id"
	if [ "$tlog" = "$out/trials/$1/portlogd.log" ]; then
		kill -TERM "$trial_pid"
		wait "$trial_pid"
		rc=$?
	else
		systemctl stop portlogd.service
		rc=$(systemctl show -P ExecMainStatus portlogd.service)
		cp "$tlog" "$out/trials/$1/portlogd.log"
		cp "$pkg/portlogd.conf" /etc/portlogd/portlogd.conf
	fi
	cat /proc/tty/driver/serial >"$out/trials/$1/uart-after.txt" 2>&1
	# what the daemon left of each port's trigger level (a port's NAME trig= after its stop)
	sed -n 's/^\([^ ]*\) .* tty=\([^ ]*\) .*/\1 \2/p' "$out/trials/$1/info.txt" | while read -r n tty; do
		echo "$n trig=$(cat "/sys/class/tty/$tty/rx_trig_bytes" 2>/dev/null || echo none)"
	done >"$out/trials/$1/after.txt"
	sync
	say "TRIALEND $1 rc=$rc rx_waits=$waits $(tr '\n' ' ' <"$out/trials/$1/after.txt")"
}

# calibrate ID PORT BAUD TRIG: see CALIBRATE above
calibrate() {
	systemctl stop portlogd.service
	case $2 in
	usb0) dev=$(ls -d /dev/serial/by-id/* 2>/dev/null | head -1) ;;
	*) dev=/dev/$2 ;;
	esac
	f=/sys/class/tty/$(basename "$(readlink -f "$dev")")/rx_trig_bytes
	[ "$4" = - ] || [ ! -e "$f" ] || echo "$4" >"$f"
	trig=$(cat "$f" 2>/dev/null || echo none)
	timeout 600 portlogd --calibrate "$dev" --baud "$3" >"$out/calibrate-$1.txt" 2>&1
	rc=$?
	sync
	say "CALIBRATE $1 rc=$rc trig=$trig $(grep '^delivery = ' "$out/calibrate-$1.txt")"
}

# usbdev present|absent: see USBDEV above
usbdev() {
	t0=$(now)
	end=$(($(date +%s) + 30))
	while :; do
		tty=$(ls /sys/bus/usb-serial/devices 2>/dev/null | head -1)
		link=$(ls /dev/serial/by-id 2>/dev/null | head -1)
		case $1-${tty:+t}${link:+l} in present-tl | absent-) break ;; esac
		[ "$(date +%s)" -lt $end ] || break
		sleep 0.2
	done
	{
		echo "--- USBDEV $1"
		ls /sys/bus/usb/devices/ /sys/bus/usb-serial/devices/ 2>&1
		cat /sys/bus/usb/devices/*/product 2>&1
		lsmod | grep -iE 'usb|xhci|ftdi'
		dmesg | grep -iE 'usb|xhci|ftdi' | tail -20
	} >>"$out/usbdev.txt" 2>&1
	drv=$(basename "$(readlink "/sys/bus/usb-serial/devices/$tty/driver" 2>/dev/null)")
	lat=$(cat "/sys/bus/usb-serial/devices/$tty/latency_timer" 2>/dev/null)
	say "USBDEV tty=${tty:-none} byid=${link:-none} driver=${drv:-none} latency_timer=${lat:-none}" \
		"waited_s=$(since "$t0")"
}

# service_on NAME BAUD [usb]: see SERVICE above
service_on() {
	systemctl stop portlogd.service
	mkdir -p "$out/$1/before"
	mv /var/log/portlogd/* "$out/$1/before/" 2>/dev/null
	sed "s/^baud = 115200\$/baud = $2/" "$pkg/portlogd.conf" >/etc/portlogd/portlogd.conf
	if [ "${3:-}" = usb ]; then
		printf '\n[serial usb0]\ndevice = %s\nbaud = %s\npriority = 70\n' \
			"$(ls -d /dev/serial/by-id/* | head -1)" "$2" >>/etc/portlogd/portlogd.conf
	fi
	systemctl start portlogd.service
	wait_active
}

# proc: see PROC above
proc() {
	pid=$(systemctl show -P MainPID portlogd.service)
	echo "pid=$pid fds=$(ls /proc/"$pid"/fd 2>/dev/null | wc -l)" \
		"threads=$(ls /proc/"$pid"/task 2>/dev/null | wc -l)" \
		"nrestarts=$(systemctl show -P NRestarts portlogd.service)" \
		"fdstore=$(systemctl show -P NFileDescriptorStore portlogd.service)" \
		"opens=$(grep -c ' usb0 EV open ' "$log")" "closes=$(grep -c ' usb0 EV close ' "$log")"
}

# usbopens N: see USBOPENS above
usbopens() {
	end=$(($(date +%s) + 30))
	while [ "$(grep -c ' usb0 EV open ' "$log")" -lt "$1" ] && [ "$(date +%s)" -lt $end ]; do
		sleep 0.2
	done
	tty=$(ls /sys/bus/usb-serial/devices 2>/dev/null | head -1)
	say "USBOPENS $(proc) tty=${tty:-none}" \
		"latency_timer=$(cat "/sys/bus/usb-serial/devices/$tty/latency_timer" 2>/dev/null)"
}

# restart_kind KIND: see RESTART above
restart_kind() {
	pid0=$(systemctl show -P MainPID portlogd.service)
	store0=$(systemctl show -P NFileDescriptorStore portlogd.service)
	opens0=$(grep -c ' line1 EV open ' "$log")
	t0=$(now)
	case $1 in
	restart) systemctl restart portlogd.service ;;
	reload) systemctl reload portlogd.service ;;
	stopstart) systemctl stop portlogd.service && systemctl start portlogd.service ;;
	upgrade) dpkg -i "$pkg/portlogd-upgrade0.deb" >"$out/restarts/dpkg.log" 2>&1 </dev/null ;;
	watchdog) kill -STOP "$pid0" ;;
	kill9) kill -KILL "$pid0" ;;
	esac
	acted=$(since "$t0")
	end=$(($(date +%s) + 90))
	while [ "$1" != reload ] && [ "$(grep -c ' line1 EV open ' "$log")" -le "$opens0" ] &&
		[ "$(date +%s)" -lt $end ]; do
		sleep 0.2
	done
	say "RESTART $1 acted_s=$acted open_s=$(since "$t0") pid=$pid0->$(systemctl show -P MainPID \
		portlogd.service) nrestarts=$(systemctl show -P NRestarts portlogd.service)" \
		"fdstore=$store0->$(systemctl show -P NFileDescriptorStore portlogd.service)" \
		"$(systemctl is-active portlogd.service)"
}

# rtload ID OFF:LEN...: see RTLOAD above. Each CPU's loop sleeps until its burst, then
# spins on bash's $EPOCHREALTIME (no fork while it spins: the shell's own builtins)
rtload_spin='t0=$1; shift
for b in "$@"; do
	s=$((t0 + ${b%:*} * 1000)) e=$((t0 + ${b%:*} * 1000 + ${b#*:} * 1000)) n=${EPOCHREALTIME/./}
	[ "$n" -ge "$s" ] || sleep "$(((s - n) / 1000000)).$(printf %06d $(((s - n) % 1000000)))"
	while [ "${EPOCHREALTIME/./}" -lt "$e" ]; do :; done
done'
rtload() {
	id=$1
	shift
	ncpu=$(nproc)
	t0=$(($(date +%s%6N) + 300000))        # all CPUs from the same moment
	pids=
	for c in $(seq 0 $((ncpu - 1))); do
		taskset -c "$c" chrt -f 50 bash -c "$rtload_spin" rtload "$t0" "$@" &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086
	wait $pids
	sum=0
	for b in "$@"; do sum=$((sum + ${b#*:})); done
	say "RTLOAD $id done cpus=$ncpu bursts=$# load_ms=$sum took_s=$(since "$(echo "$t0" |
		awk '{ printf "%.6f", $1 / 1e6 }')") rt_runtime_us=$(cat /proc/sys/kernel/sched_rt_runtime_us)" \
		"rt_period_us=$(cat /proc/sys/kernel/sched_rt_period_us)"
}

# irqcpu NAME CPUS: see IRQCPU above
irqcpu() {
	irq=$(cat "/sys/class/tty/$1/irq" 2>/dev/null)
	echo "$2" >"/proc/irq/$irq/smp_affinity_list" 2>/dev/null
	rc=$?
	say "IRQCPU $1 irq=$irq rc=$rc affinity=$(cat "/proc/irq/$irq/smp_affinity_list" 2>&1)" \
		"counts=$(awk -v i="$irq:" -v n="$(nproc)" '$1 == i { for (c = 2; c <= n + 1; c++)
			printf "%s%s", $c, (c <= n ? "," : "") }' /proc/interrupts)"
}

# copylog NAME: see COPYLOG above
copylog() {
	systemctl stop portlogd.service
	mkdir -p "$out/$1"
	cp -a /var/log/portlogd/. "$out/$1/"
	journalctl -u portlogd.service -o short-iso --no-pager >"$out/$1/journal.txt" 2>&1
	dmesg | grep -E 'EXT4-fs|recover' >"$out/$1/dmesg.txt"
	sync
	say "COPYLOG $1 $(ls "$out/$1" | tr '\n' ' ')"
}

if [ -f "$out/booted" ]; then
	# an image that has booted before: the service starts at boot with the config there
	echo "booted before: $(cat "$out/booted") time(s)"
	echo $(($(cat "$out/booted") + 1)) >"$out/booted"
	say "REBOOT $(cut -d' ' -f1 /proc/uptime)"
	wait_active
else
	# --- the package, as a user installs it: its scripts make the user and the log
	# directory, enable the service and start it with the shipped config
	# the UARTs whose modem lines are raised before the install: the guest's console and
	# the test's own channel (their lines belong to those, not to the daemon)
	uarts_raised() { grep -E '^[0-9]+:' /proc/tty/driver/serial | grep -E 'DTR|RTS' | cut -d: -f1 | sort; }
	raised_before=$(uarts_raised)
	{
		dpkg_step install -i "$pkg/portlogd.deb"
		state install
		echo "install_groups=$(id -Gn portlogd 2>&1)"
		echo "install_logdir_mode=$(stat -c '%a %U %G' /var/log/portlogd 2>&1)"
		# 60-portlogd.rules, applied by the postinst to the device already there
		echo "install_dma=$(stat -c '%a %G' /dev/cpu_dma_latency 2>&1)"
		echo "install_rtc=$(stat -c '%a %G' /dev/rtc0 2>&1)"
		# the shipped config has no port: running, no device opened, and it says so
		# (the 8250 driver shows a port's raised modem lines, DTR and RTS, while it is
		# open: none raised since the install; the daemon's descriptors name no tty)
		echo "install_statustext=$(systemctl show -P StatusText portlogd.service)"
		echo "install_uart_lines=$(uarts_raised | grep -cvxF "$raised_before")"
		echo "install_tty_fds=$(ls -l /proc/"$(systemctl show -P MainPID portlogd.service)"/fd \
			2>/dev/null | grep -c '/dev/tty')"
		portlogd --check-system >"$out/install-checksys.txt" 2>&1
		echo "install_checksys_noport=$(grep -c '^ *WARN *config .*no port: the service runs and logs nothing' \
			"$out/install-checksys.txt")"
	} >"$out/pkg-install.txt"
	systemctl stop portlogd.service
	# what the service wrote with the shipped config; then the test's own config
	mkdir -p "$out/install-log"
	mv /var/log/portlogd/* "$out/install-log/" 2>/dev/null
	echo "install_shipped_config=$(grep -c ' portlogd EV start .* config=/etc/portlogd/portlogd.conf ' \
		"$out"/install-log/portlogd.log 2>/dev/null)" >>"$out/pkg-install.txt"
	{
		echo "install_noport_start=$(grep -c ' portlogd EV start .* serial=0 parallel=0' \
			"$out"/install-log/portlogd.log 2>/dev/null)"
		echo "install_opens=$(grep -c ' EV open ' "$out"/install-log/portlogd.log 2>/dev/null)"
	} >>"$out/pkg-install.txt"
	cp "$pkg/portlogd.conf" /etc/portlogd/portlogd.conf
	if [ -f "$pkg/break.conf" ]; then
		mkdir -p /etc/systemd/system/portlogd.service.d
		cp "$pkg/break.conf" /etc/systemd/system/portlogd.service.d/
		systemctl daemon-reload
	fi
	echo 1 >"$out/booted"
	sync
	say "MARK"
	while read -r cmd <&3; do
		[ "$(printf '%s' "$cmd" | tr -d '\r')" = GO ] && break
	done
	systemctl start --no-block portlogd.service
	wait_active
fi

while read -r cmd <&3; do
	cmd=$(printf '%s' "$cmd" | tr -d '\r')
	case $cmd in
	ROTATE)
		logrotate -f /etc/logrotate.d/portlogd
		say "ROTATE rc=$? $(ls /var/log/portlogd | tr '\n' ' ')"
		;;
	COLLECT)
		collect
		say "COLLECT done"
		;;
	WATCHDOG)
		watchdog
		say "WATCHDOG $(tr '\n' ' ' <"$out/watchdog.txt")"
		;;
	DONE)
		journalctl -u portlogd.service -o short-iso --no-pager >"$out/journal.txt" 2>&1
		systemctl stop portlogd.service
		cp -a /var/log/portlogd "$out/log"
		sync
		say "DONE"
		;;
	PACKAGE)
		{
			# the user's enablement, which purge must take away
			systemctl disable portlogd.service
			systemctl enable --now portlogd.service
			echo "user_enable_rc=$?"
			state before
			dpkg_step upgrade -i "$pkg/portlogd-upgrade.deb"
			state upgrade
			dpkg_step remove -r portlogd
			state remove
			dpkg_step purge -P portlogd
			state purge
		} >"$out/pkg.txt" 2>>"$out/guest.log"
		sync
		say "PACKAGE $(grep '_s=' "$out/pkg.txt" | tr '\n' ' ')"
		systemctl poweroff
		exit 0
		;;
	POWEROFF)
		sync
		systemctl poweroff
		exit 0
		;;
	APPARMOR)
		apparmor_test
		say "APPARMOR $(tr '\n' ' ' <"$out/apparmor.txt")"
		;;
	TRIAL\ *)
		# shellcheck disable=SC2086
		trial ${cmd#TRIAL }
		;;
	TRIALEND\ *)
		# shellcheck disable=SC2086
		trialend ${cmd#TRIALEND }
		;;
	CALIBRATE\ *)
		# shellcheck disable=SC2086
		calibrate ${cmd#CALIBRATE }
		;;
	USBDEV\ *)
		usbdev "${cmd#USBDEV }"
		;;
	"RESTARTS begin")
		service_on restarts 9600
		say "RESTARTS begin $(systemctl is-active portlogd.service)"
		;;
	"RESTARTS end")
		journalctl -u portlogd.service -o short-iso --no-pager >"$out/restarts/journal.txt" 2>&1
		cp -a /var/log/portlogd/. "$out/restarts/"
		cat /proc/tty/driver/serial >"$out/restarts/uart.txt"
		cp "$pkg/portlogd.conf" /etc/portlogd/portlogd.conf
		sync
		say "RESTARTS end"
		;;
	RESTART\ *)
		restart_kind "${cmd#RESTART }"
		;;
	SERVICE\ *)
		# shellcheck disable=SC2086
		service_on ${cmd#SERVICE }
		say "SERVICE $(systemctl is-active portlogd.service)"
		;;
	COPYLOG\ *)
		copylog "${cmd#COPYLOG }"
		;;
	PROC)
		say "PROC $(proc)"
		;;
	USBOPENS\ *)
		usbopens "${cmd#USBOPENS }"
		;;
	RTLOAD\ *)
		# shellcheck disable=SC2086
		rtload ${cmd#RTLOAD }
		;;
	IRQCPU\ *)
		# shellcheck disable=SC2086
		irqcpu ${cmd#IRQCPU }
		;;
	'') ;;
	*) say "UNKNOWN $cmd" ;;
	esac
done
