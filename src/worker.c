/*-------------------------------------------------------------------------
 *
 * worker.c
 *		What the module's background workers share: the set-up of a dynamic
 *		worker, the autowarm worker's shutdown requests (the server's or
 *		someone else's), and its cancel, which stops the restore it leads.
 *
 * The autowarm worker (autowarm.c), the restore leader that runs in it
 * (restore.c) and the shutdown dump's walk of the OS page cache
 * (oswalk.c) need to know whether a shutdown request is the server's or
 * someone's pg_terminate_backend(), whether a second one came, and
 * whether a cancel came; the restore leader, the standby channel and
 * their workers are started the same way.  These pieces are here, below
 * all of them.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "utils/backend_status.h"

#include "compat.h"
#include "worker.h"

volatile sig_atomic_t wc_cancel_pending = false;
volatile sig_atomic_t wc_second_request = false;

/* The postmaster asked the autowarm worker to stop: the server shuts down. */
static volatile sig_atomic_t shutdown_requested = false;

/* How long after a first stop request a second one cuts the dump short; ms. */
#define WC_SECOND_REQUEST_MS	1000

/*
 * In a signal handler: note the signal in *flag and wake the process,
 * whose loop looks at the flag.
 */
void
wc_note_signal(volatile sig_atomic_t *flag)
{
	int			save_errno = errno;

	*flag = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * Fill in a dynamic background worker of this module that connects to a
 * database, starts once the server is consistent and is never restarted;
 * the caller names it and gives its argument.  It tells this process when
 * it started and stopped.
 */
void
wc_init_dynamic_worker(BackgroundWorker *worker, const char *function,
					   const char *type)
{
	memset(worker, 0, sizeof(*worker));
	worker->bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION | WC_BGWORKER_INTERRUPTIBLE;
	worker->bgw_start_time = BgWorkerStart_ConsistentState;
	worker->bgw_restart_time = BGW_NEVER_RESTART;
	strcpy(worker->bgw_library_name, "pg_warmcache");
	strlcpy(worker->bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker->bgw_type, type, BGW_MAXLEN);
	worker->bgw_notify_pid = MyProcPid;
}

/*
 * SIGTERM of the autowarm worker: a request to stop, whoever sends it.
 * The postmaster sends SIGTERM to a static background worker only to stop
 * it with the server (a smart or fast shutdown; an immediate one sends
 * SIGQUIT), each time twice: to the process and to its process group
 * (signal_child()).  A service manager that stops the server by signalling
 * every process of its control group sends it one too, before or after the
 * postmaster's; pg_terminate_backend(), kill and pg_ctl kill send it from
 * another process.  Every one of them makes the worker stop what it does,
 * write its dump and exit, so that no way of stopping the server loses the
 * saved set.  The sender only tells whether the server shuts down (the
 * postmaster's request), for the exit code.  A request that comes
 * WC_SECOND_REQUEST_MS or more after the first is a second request, which
 * cuts the dump's walk of the OS cache short (oswalk.c): the copies that
 * the postmaster and a service manager send at one stop come within
 * milliseconds of each other.
 */
static volatile sig_atomic_t stop_requested = false;
static int64 first_request_ms = 0;

static void
shutdown_request_handler(WC_SENDER_SIGNAL_ARGS)
{
	int			save_errno = errno;
	struct timespec ts;
	int64		now_ms;

	/* A child forked by system() and not yet exec'd is not the worker. */
	if (WC_SIGNAL_INHERITED())
		return;
	(void) clock_gettime(CLOCK_MONOTONIC, &ts);
	now_ms = (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (WC_SIGNAL_SENDER() == PostmasterPid)
		shutdown_requested = true;
	if (!stop_requested)
	{
		stop_requested = true;
		first_request_ms = now_ms;
	}
	else if (now_ms - first_request_ms >= WC_SECOND_REQUEST_MS)
		wc_second_request = true;
	ShutdownRequestPending = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * Install the autowarm worker's SIGTERM handler, once for its whole life,
 * while signals are still blocked.
 */
void
wc_handle_shutdown_requests(void)
{
	wc_pqsignal_sender(SIGTERM, shutdown_request_handler);
}

/*
 * Is the server shutting down?  Only in the autowarm worker: yes once the
 * postmaster asked it to stop, or when the postmaster is gone (nothing is
 * to come back then).  A stop request from anyone else alone is a
 * termination: the worker is started again.
 */
bool
wc_server_stopping(void)
{
	return shutdown_requested || !PostmasterIsAlive();
}

/*
 * How many of the server's processes are of this type now, as
 * pg_stat_activity shows them, leaving out background workers of the
 * bgw_type except (NULL: none) and those gone since.  From a snapshot of
 * the backends' status, taken afresh and dropped again at once: it
 * replaces one the caller's transaction may hold, so that a
 * pg_stat_activity read later in it is fresh too.  A process still
 * starting up, that has not reported its status yet, is not counted.
 */
int
wc_count_processes(BackendType type, const char *except)
{
	int			n;
	int			count = 0;
	int			i;

	pgstat_clear_backend_activity_snapshot();
	n = pgstat_fetch_stat_numbackends();
	for (i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *entry = WC_LOCAL_BEENTRY(i);
		const char *bgw_type;

		if (entry == NULL || entry->backendStatus.st_backendType != type)
			continue;
		if (except != NULL)
		{
			/* NULL: gone since, and its slot free. */
			bgw_type = GetBackgroundWorkerTypeByPid(entry->backendStatus.st_procpid);
			if (bgw_type == NULL || strcmp(bgw_type, except) == 0)
				continue;
		}
		count++;
	}
	pgstat_clear_backend_activity_snapshot();
	return count;
}
