/*-------------------------------------------------------------------------
 *
 * workload.c
 *		What the server's queries are doing, as the restore's pacer and the
 *		dump's walk of the OS cache ask it, and this process's CPU time.
 *
 * Both the restore (pacer.c) and a dump's walk of the relation files
 * (oscache.c) give way to queries: they look whether a query waits for a
 * data file read, and whether queries keep every CPU busy, and they count
 * their own CPU time against a budget (WC_BUSY_CPU_PERCENT).  The looks
 * are here, below both, so that neither calls the other.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/workload.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

#include "utils/timestamp.h"

#include "compat.h"
#include "pg_internals.h"
#include "settings.h"
#include "shmem.h"
#include "workload.h"

/* The lowest CPU priority, the nice value a process gives way with. */
#define WC_LOWEST_PRIORITY	19

/* How often the CPUs' load is read, in ms. */
#define WC_CPU_PROBE_MS		10

static bool
is_restore_process(int pid)
{
	int			i;

	if (pid == wc_shared->worker_pid)
		return true;
	for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
		if (wc_shared->slots[i].pid == pid)
			return true;
	return false;
}

/*
 * Are all CPUs taken, so that what we run, someone else waits for?  On
 * Linux, the tasks that are running or ready to run (the fourth field of
 * /proc/loadavg, ourselves included) against the CPUs we may run on, more
 * of them in two looks running; read at most every WC_CPU_PROBE_MS, the
 * last answer standing in between.
 * Elsewhere, taken to be so whenever a query runs.
 */
static bool
cpus_taken(void)
{
#ifdef __linux__
	static int	ncpus = 0;
	static TimestampTz probed_at = 0;
	static bool taken = true;
	static int	streak = 0;
	TimestampTz now = GetCurrentTimestamp();
	char		buf[128];
	int			fd;
	ssize_t		len;
	int			running;

	if (ncpus == 0)
	{
		cpu_set_t	set;

		CPU_ZERO(&set);
		ncpus = sched_getaffinity(0, sizeof(set), &set) == 0 ?
			CPU_COUNT(&set) : (int) sysconf(_SC_NPROCESSORS_ONLN);
		ncpus = Max(ncpus, 1);
	}
	if (now - probed_at < (TimestampTz) WC_CPU_PROBE_MS * 1000)
		return taken;
	probed_at = now;
	fd = open("/proc/loadavg", O_RDONLY);
	if (fd < 0)
		return taken = true;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return taken = true;
	buf[len] = '\0';
	if (sscanf(buf, "%*s %*s %*s %d/", &running) != 1)
		return taken = true;
	/* Twice running: a process starting up is not a busy machine. */
	streak = running > ncpus ? streak + 1 : 0;
	return taken = (streak >= 2);
#else
	return true;
#endif
}

/*
 * Look at what the other backends do: does one wait for a data file read,
 * is one running on a CPU that we would take from it?  Their wait events
 * are read without a lock, as pg_stat_activity does (pg_internals.c): a
 * stale value only delays the reaction by one look.  A backend with no
 * wait event is running; an idle one waits for its client.  A running one
 * counts only while all CPUs are taken (cpus_taken): where a CPU is free,
 * what we run costs no query anything.  A backend counts once its process
 * is confirmed to run, which up to 16 costs a look at the process array:
 * only the first one that would change the answer is confirmed.
 * Auxiliary processes (18's I/O workers among them) are not looked at:
 * they work on others' behalf.
 */
void
wc_look_at_backends(bool *reading, bool *on_cpu)
{
	int			n = wc_backend_look();
	int			i;

	*reading = *on_cpu = false;
	for (i = 0; i < n && !*reading; i++)
	{
		int			pid;
		uint32		wait;

		if (!wc_backend_seen(i, &pid, &wait))
			continue;
		if (wait != 0 && !wc_is_read_wait(wait))
			continue;
		if (wait == 0 && *on_cpu)
			continue;
		if (is_restore_process(pid) || !wc_backend_confirmed(i, pid))
			continue;
		if (wait == 0)
			*on_cpu = true;
		else
			*reading = true;
	}
	if (*on_cpu && !cpus_taken())
		*on_cpu = false;
}

/* This process's CPU time, in microseconds. */
int64
wc_cpu_time_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	return (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * Under pg_warmcache.cpu_yield = priority, run this process at the lowest
 * CPU priority, for the rest of its life: the kernel then gives it only
 * the CPU time that no query of normal priority wants, however the load
 * is made up.  An unprivileged process cannot raise its priority again
 * (RLIMIT_NICE), so only the processes that always give way lower it: the
 * restore workers and the autowarm worker, not warm()'s.
 */
void
wc_lower_cpu_priority(void)
{
	if (wc_cpu_yield != WC_CPU_YIELD_PRIORITY)
		return;
	errno = 0;
	if (setpriority(PRIO_PROCESS, 0, WC_LOWEST_PRIORITY) != 0)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_warmcache: could not lower the CPU priority of this process: %m")));
}
