/*-------------------------------------------------------------------------
 *
 * settings.c
 *		The module's settings (GUCs): their values and their definitions.
 *
 * The values are plain variables that the other modules read; nothing
 * here calls any other module.  _PG_init (pg_warmcache.c) defines them,
 * preloaded or not, so that warm() and warm_table() read theirs in any
 * session.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/settings.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/varlena.h"

#include "compat.h"
#include "settings.h"

/*
 * A dump's chunk is one allocation, at most MaxAllocSize: an array of runs
 * of 28 bytes (format.h asserts the size).
 */
#define WC_MAX_SORT_CHUNK	((int) (MaxAllocSize / 28))

bool		wc_autowarm = true;
int			wc_dump_interval = 300;
int			wc_restore_mode = WC_MODE_BUFFER;
int			wc_restore_workers = 2;
int			wc_max_restore_rate = 0;
bool		wc_restore_yield = false;
int			wc_restore_headroom = 10;
int			wc_sort_chunk = 1024 * 1024;
bool		wc_dump_os_cache = true;
int			wc_follow_primary = WC_FOLLOW_OFF;
int			wc_max_warm_workers = 2;
int			wc_min_parallel_warm_size = 64 * 1024 * 1024 / BLCKSZ;
int			wc_warm_worker_delay = 0;
int			wc_platform_shortcuts = WC_SHORTCUT_ALL;
char	   *wc_platform_shortcuts_string = NULL;
char	   *wc_restore_limit_string = NULL;
int			wc_past_restore_limit = WC_PAST_LIMIT_OS_CACHE;

/*
 * pg_warmcache.restore_limit as parsed: a share of shared_buffers in
 * percent, or a number of blocks; neither set, no limit.
 */
typedef struct RestoreLimit
{
	double		percent;
	int64		blocks;
} RestoreLimit;

static RestoreLimit restore_limit = {0, 0};

static const struct
{
	const char *name;
	int			flag;
}			shortcut_names[] = {
	{"prefault", WC_SHORTCUT_PREFAULT},
	{"cachestat", WC_SHORTCUT_CACHESTAT},
	{"device_piece", WC_SHORTCUT_DEVICE_PIECE},
};

static const struct config_enum_entry mode_options[] = {
	{"prefetch", WC_MODE_PREFETCH, false},
	{"read", WC_MODE_READ, false},
	{"buffer", WC_MODE_BUFFER, false},
	{NULL, 0, false}
};

static const struct config_enum_entry past_limit_options[] = {
	{"os_cache", WC_PAST_LIMIT_OS_CACHE, false},
	{"skip", WC_PAST_LIMIT_SKIP, false},
	{NULL, 0, false}
};

static const struct config_enum_entry follow_options[] = {
	{"off", WC_FOLLOW_OFF, false},
	{"os", WC_FOLLOW_OS, false},
	{"buffer", WC_FOLLOW_BUFFER, false},
	{NULL, 0, false}
};

/*
 * pg_warmcache.platform_shortcuts: a list of the names above, or "all";
 * the flags are handed to the assign hook through *extra.
 */
static bool
check_platform_shortcuts(char **newval, void **extra, GucSource source)
{
	char	   *copy = pstrdup(*newval);
	List	   *names;
	ListCell   *lc;
	int			flags = 0;
	int		   *result;

	if (!SplitIdentifierString(copy, ',', &names))
	{
		GUC_check_errdetail("List syntax is invalid.");
		pfree(copy);
		list_free(names);
		return false;
	}
	foreach(lc, names)
	{
		char	   *name = (char *) lfirst(lc);
		int			i;

		if (pg_strcasecmp(name, "all") == 0)
		{
			flags = WC_SHORTCUT_ALL;
			continue;
		}
		for (i = 0; i < lengthof(shortcut_names); i++)
			if (pg_strcasecmp(name, shortcut_names[i].name) == 0)
				break;
		if (i == lengthof(shortcut_names))
		{
			GUC_check_errdetail("Unrecognized shortcut: \"%s\".", name);
			GUC_check_errhint("The shortcuts are prefault, cachestat and device_piece, or all.");
			pfree(copy);
			list_free(names);
			return false;
		}
		flags |= shortcut_names[i].flag;
	}
	pfree(copy);
	list_free(names);
	result = (int *) WC_GUC_MALLOC(sizeof(int));
	if (result == NULL)
		return false;
	*result = flags;
	*extra = result;
	return true;
}

static void
assign_platform_shortcuts(const char *newval, void *extra)
{
	wc_platform_shortcuts = *((int *) extra);
}

/*
 * pg_warmcache.restore_limit: empty or 0 for none, a share of
 * shared_buffers ("25%"), or a size with a memory unit ("2GB"; without
 * one, blocks, as shared_buffers takes it).  The parsed form goes to the
 * assign hook through *extra.
 */
static bool
check_restore_limit(char **newval, void **extra, GucSource source)
{
	RestoreLimit parsed = {0, 0};
	RestoreLimit *result;
	char	   *value = *newval;
	size_t		len;

	while (*value == ' ')
		value++;
	len = strlen(value);
	while (len > 0 && value[len - 1] == ' ')
		len--;
	if (len > 0 && value[len - 1] == '%')
	{
		char	   *number = pnstrdup(value, len - 1);
		char	   *end;
		double		percent;

		errno = 0;
		percent = strtod(number, &end);
		while (*end == ' ')
			end++;
		if (end == number || *end != '\0' || errno != 0 ||
			!(percent >= 0 && percent <= 100))
		{
			pfree(number);
			GUC_check_errdetail("A share of shared_buffers must be a number from 0 to 100 followed by %%.");
			return false;
		}
		pfree(number);
		parsed.percent = percent;
	}
	else if (len > 0)
	{
		char	   *size = pnstrdup(value, len);
		const char *hint = NULL;
		int			blocks;

		if (!parse_int(size, &blocks, GUC_UNIT_BLOCKS, &hint) || blocks < 0)
		{
			pfree(size);
			GUC_check_errdetail("The limit must be a share of shared_buffers, such as 25%%, or a size, such as 2GB.");
			if (hint)
				GUC_check_errhint("%s", hint);
			return false;
		}

		/*
		 * parse_int() rounds: a size under half a block would be 0, which
		 * sets no limit at all.  Only a zero means that.
		 */
		if (blocks == 0 && strtod(size, NULL) != 0)
		{
			pfree(size);
			GUC_check_errdetail("A size of less than one block (%d kB) leaves no room in shared buffers.",
								BLCKSZ / 1024);
			GUC_check_errhint("Set 0 or an empty string for no limit.");
			return false;
		}
		pfree(size);
		parsed.blocks = blocks;
	}
	result = (RestoreLimit *) WC_GUC_MALLOC(sizeof(RestoreLimit));
	if (result == NULL)
		return false;
	*result = parsed;
	*extra = result;
	return true;
}

static void
assign_restore_limit(const char *newval, void *extra)
{
	restore_limit = *((RestoreLimit *) extra);
}

/*
 * The blocks a restore may put into shared buffers, or 0 for no limit.  A
 * share of them rounds up, so that a positive share is at least a block.
 */
int64
wc_restore_limit_blocks(void)
{
	if (restore_limit.percent > 0)
		return (int64) ceil(NBuffers * restore_limit.percent / 100.0);
	return restore_limit.blocks;
}

/*
 * Define the settings and reserve their prefix.
 */
void
wc_define_settings(void)
{
	DefineCustomBoolVariable("pg_warmcache.autowarm",
							 "Restores the saved blocks at start and dumps them periodically and at shutdown.",
							 NULL,
							 &wc_autowarm,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warmcache.dump_interval",
							"Time between dumps of the buffer cache's block list.",
							"0 dumps only at shutdown.",
							&wc_dump_interval,
							300, 0, INT_MAX / 1000,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("pg_warmcache.restore_mode",
							 "How restored blocks are warmed: into shared buffers, or only into the OS cache.",
							 NULL,
							 &wc_restore_mode,
							 WC_MODE_BUFFER,
							 mode_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warmcache.restore_workers",
							"Databases restored at the same time, one worker each.",
							NULL,
							&wc_restore_workers,
							2, 1, WC_MAX_RESTORE_WORKERS,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warmcache.max_restore_rate",
							"Upper limit on the restore's read rate, in megabytes per second.",
							"0 sets no limit.",
							&wc_max_restore_rate,
							0, 0, INT_MAX / 2,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomStringVariable("pg_warmcache.restore_limit",
							   "Most that a restore puts into shared buffers: a share of shared_buffers, or a size.",
							   "Empty or 0 sets no limit.  The hottest blocks come first within it.",
							   &wc_restore_limit_string,
							   "",
							   PGC_SIGHUP,
							   0,
							   check_restore_limit,
							   assign_restore_limit, NULL);
	DefineCustomEnumVariable("pg_warmcache.past_restore_limit",
							 "What a restore does with the blocks past pg_warmcache.restore_limit.",
							 "os_cache: reads them into the OS cache only; skip: leaves them out.",
							 &wc_past_restore_limit,
							 WC_PAST_LIMIT_OS_CACHE,
							 past_limit_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warmcache.restore_headroom",
							"Share of the restore's read rate left to queries that wait for reads, in percent.",
							"While queries wait for reads, the restore reads at most the rest of the highest rate it reached, so that the device's queue stays short.  0 turns this off.",
							&wc_restore_headroom,
							10, 0, 90,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_warmcache.restore_yield",
							 "Makes the restore read small pieces while queries wait for a read.",
							 "For workloads that read outside the saved set: it halves the restore's rate where I/O operations are the limit.",
							 &wc_restore_yield,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_warmcache.dump_os_cache",
							 "Dumps also which blocks of the relation files the OS page cache holds, and restores them into it.",
							 NULL,
							 &wc_dump_os_cache,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomEnumVariable("pg_warmcache.follow_primary",
							 "On a standby, keeps the primary's hot set in this server's caches.",
							 "off: no; os: in the OS page cache; buffer: also in free shared buffers. "
							 "At promotion the set is loaded into shared buffers.",
							 &wc_follow_primary,
							 WC_FOLLOW_OFF,
							 follow_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	/*
	 * The server's budget of warm workers: superuser only, so that no user
	 * can take more worker slots than the DBA allowed.  The threshold may
	 * stay the user's: lowering it only splits smaller relations, among no
	 * more workers than the budget allows.
	 */
	DefineCustomIntVariable("pg_warmcache.max_warm_workers",
							"Background workers that warm() and warm_table() may run at once, in all sessions together.",
							"0 warms in the calling process only.  Takes effect only with the library preloaded.",
							&wc_max_warm_workers,
							2, 0, WC_MAX_WARM_WORKERS,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warmcache.min_parallel_warm_size",
							"Smallest relation fork that warm() and warm_table() split among workers.",
							NULL,
							&wc_min_parallel_warm_size,
							64 * 1024 * 1024 / BLCKSZ, 0, INT_MAX / 3,
							PGC_USERSET,
							GUC_UNIT_BLOCKS,
							NULL, NULL, NULL);

	/* For tests of parallel warming: every process takes its time. */
	DefineCustomIntVariable("pg_warmcache.warm_worker_delay",
							"Time each process of a parallel warm waits before each stripe.",
							NULL,
							&wc_warm_worker_delay,
							0, 0, 60000,
							PGC_SUSET,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	/* For tests of the merge: chunks smaller than shared_buffers. */
	DefineCustomIntVariable("pg_warmcache.sort_chunk",
							"Buffer headers a dump sorts in memory at once.",
							NULL,
							&wc_sort_chunk,
							1024 * 1024, 1024, WC_MAX_SORT_CHUNK,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	/* For the benchmarks that weigh each direct use of the system. */
	DefineCustomStringVariable("pg_warmcache.platform_shortcuts",
							   "Direct uses of the operating system that pg_warmcache may make.",
							   "A list of prefault, cachestat and device_piece, or all.",
							   &wc_platform_shortcuts_string,
							   "all",
							   PGC_SUSET,
							   GUC_LIST_INPUT | GUC_NOT_IN_SAMPLE,
							   check_platform_shortcuts,
							   assign_platform_shortcuts, NULL);

	MarkGUCPrefixReserved("pg_warmcache");
}
