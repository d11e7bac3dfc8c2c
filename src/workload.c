/*-------------------------------------------------------------------------
 *
 * workload.c
 *		What the server's queries are doing, as the restore's pacer and the
 *		dump's walk of the OS cache ask it, and this process's CPU time.
 *
 * Both the restore (pacer.c) and a dump's walk of the relation files
 * (oswalk.c) give way to queries: they look whether a query waits for a
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

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

#include "utils/timestamp.h"

#include "compat.h"
#include "pg_internals.h"
#include "operation.h"
#include "restore_shared.h"
#include "workload.h"

/* Whether pid is the autowarm worker or a restore worker. */
static bool
is_restore_process(int pid)
{
	return wc_is_autowarm_worker(pid) || wc_is_restore_worker(pid);
}

/* The CPUs this process may run on. */
static int
usable_cpus(void)
{
	static int	ncpus = 0;

	if (ncpus == 0)
	{
#ifdef __linux__
		cpu_set_t	set;

		CPU_ZERO(&set);
		if (sched_getaffinity(0, sizeof(set), &set) == 0)
			ncpus = CPU_COUNT(&set);
#endif
		if (ncpus <= 0)
			ncpus = (int) sysconf(_SC_NPROCESSORS_ONLN);
		ncpus = Max(ncpus, 1);
	}
	return ncpus;
}

/*
 * Look at what the other backends do: does one wait for a data file read,
 * do they keep every CPU busy?  Their wait events are read without a lock,
 * as pg_stat_activity does (pg_internals.c): a stale value only delays the
 * reaction by one look.  A backend with no wait event is running; an idle
 * one waits for its client.  The CPUs count as the queries' when at least
 * as many of this server's backends run as there are CPUs: with one free,
 * what we run costs no query anything.  Only this server's backends count,
 * so that load from outside it (another server, a backup, a build) never
 * holds the restore back from shared buffers: that load is not what the
 * restore serves, and it is the scheduler's to share out.
 * A backend counts once its process is confirmed to run, which up to 16
 * costs a look at the process array for each one counted.  Auxiliary
 * processes (18's I/O workers among them) are not looked at: they work on
 * others' behalf.
 */
void
wc_look_at_backends(bool *reading, bool *on_cpu)
{
	int			n = wc_backend_look();
	int			ncpus = usable_cpus();
	int			running = 0;
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
		if (wait == 0 && running >= ncpus)
			continue;
		if (is_restore_process(pid) || !wc_backend_confirmed(i, pid))
			continue;
		if (wait == 0)
			running++;
		else
			*reading = true;
	}
	*on_cpu = running >= ncpus;
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
 * Bytes this process made the kernel read from a storage device, or -1
 * where that is not known.  getrusage()'s block input operations: Linux
 * counts them in 512-byte units as the reads go to the device, the
 * read-ahead and advice a process starts included, and counts nothing for
 * a page cache hit.  Elsewhere the unit is not defined.
 */
int64
wc_device_read_bytes(void)
{
#ifdef __linux__
	struct rusage usage;

	if (getrusage(RUSAGE_SELF, &usage) != 0)
		return -1;
	return (int64) usage.ru_inblock * 512;
#else
	return -1;
#endif
}
