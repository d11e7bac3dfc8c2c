/*-------------------------------------------------------------------------
 *
 * channel_state.c
 *		The standby channel's shared state: what it publishes and follows,
 *		and what it found, logged once when it changes.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/channel_state.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "channel_key.h"
#include "channel_state.h"
#include "dump.h"
#include "operation.h"

/*
 * The channel's shared state.  Its plain fields are written only with the
 * status lock held exclusively (operation.h), so that warmcache_status()
 * reports them with the rest; the notes are the channel workers' (see
 * wc_channel_notes()).
 */
typedef struct ChannelShared
{
	uint64		published_dumps;	/* the dumps (DumpStatus.dumps) dealt
									 * with: published, or with nowhere to
									 * be published */
	FollowState follow_state;	/* on a standby: what the channel found */
	TimestampTz followed_dumped_at; /* the followed file's dump time, or 0 */
	int64		followed_blocks;	/* the blocks it holds */
	int			lock_holder;	/* the pid that held a lock the channel's
								 * last worker found taken, or 0 */
	ChannelNotes notes;
} ChannelShared;

static ChannelShared *channel = NULL;

/* A follow state's name, as warmcache_status() shows it. */
const char *
wc_follow_state_name(FollowState state)
{
	switch (state)
	{
		case WC_FOLLOW_NOT_LOOKED:
			return "starting";
		case WC_FOLLOW_NO_DATABASE:
			return "no database postgres";
		case WC_FOLLOW_NO_TABLE:
			return "nothing published: no extension";
		case WC_FOLLOW_NOTHING_PUBLISHED:
			return "nothing published yet";
		case WC_FOLLOW_UNUSABLE:
			return "published file not usable";
		case WC_FOLLOW_NOT_SIGNED:
			return "published file not signed by the primary";
		case WC_FOLLOW_NO_KEY:
			return "no usable key";
		case WC_FOLLOW_LOCKED:
			return "published table locked";
		case WC_FOLLOW_REFUSED:
			return "published table refused";
		case WC_FOLLOW_FOLLOWING:
			return "following";
		case WC_FOLLOW_PROMOTED:
			return "promoted";
	}
	return "unknown";
}

/*
 * Note what the channel found; a change is logged, once, and with again
 * the same state too (a new publication found unusable).
 */
void
wc_channel_set_follow_state(FollowState state, const char *problem, bool again)
{
	FollowState old;

	wc_status_lock(LW_EXCLUSIVE);
	old = channel->follow_state;
	channel->follow_state = state;
	wc_status_unlock();
	if (old == state && !again)
		return;

	switch (state)
	{
		case WC_FOLLOW_NOT_LOOKED:
		case WC_FOLLOW_PROMOTED:
			break;
		case WC_FOLLOW_NO_DATABASE:
			ereport(LOG,
					(errmsg("cannot follow the primary's hot set"),
					 errdetail("Database \"%s\" does not exist or does not allow connections. The primary publishes its hot set in that database.",
							   WC_CHANNEL_DATABASE)));
			break;
		case WC_FOLLOW_NO_TABLE:
			ereport(LOG,
					(errmsg("the primary publishes no hot set to follow"),
					 errdetail("Database \"%s\" has no table %s: extension pg_warmcache 1.2 or later is not installed there.",
							   WC_CHANNEL_DATABASE, WC_CHANNEL_TABLE),
					 errhint("Run CREATE EXTENSION pg_warmcache, or ALTER EXTENSION pg_warmcache UPDATE, in database \"%s\" on the primary.",
							 WC_CHANNEL_DATABASE)));
			break;
		case WC_FOLLOW_NOTHING_PUBLISHED:
			ereport(LOG,
					(errmsg("the primary has not published its hot set yet"),
					 errdetail("Table %s in database \"%s\" is empty.",
							   WC_CHANNEL_TABLE, WC_CHANNEL_DATABASE),
					 errhint("The primary publishes after each dump, with pg_warmcache in \"shared_preload_libraries\", \"pg_warmcache.autowarm\" on and \"pg_warmcache.dump_interval\" above zero; or this standby has not replayed that far yet.")));
			break;
		case WC_FOLLOW_UNUSABLE:
			ereport(LOG,
					(errmsg("the primary's published hot set is not usable: %s",
							problem ? problem : "unknown problem"),
					 errdetail("The standby tries again when the primary publishes its next dump.")));
			break;
		case WC_FOLLOW_NOT_SIGNED:
			ereport(LOG,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the primary's published hot set is not followed: %s",
							problem ? problem : "unknown problem"),
					 errdetail("A standby follows only rows signed with the key that it shares with its primary: the cluster's own, or the one in file \"%s\". Either another role wrote the rows, or the key differs between the two servers.",
							   WC_KEY_FILE),
					 errhint("If \"%s\" exists on the primary, copy it to this standby.",
							 WC_KEY_FILE)));
			break;
		case WC_FOLLOW_NO_KEY:
			ereport(LOG,
					(errcode(ERRCODE_CONFIG_FILE_ERROR),
					 errmsg("cannot follow the primary's hot set: %s",
							problem ? problem : "unknown problem"),
					 errdetail("The key file, when it exists, is the only key the standby uses."),
					 errhint("Write 64 hexadecimal digits into \"%s\", owned by the server's user and readable by it alone, or remove the file.",
							 WC_KEY_FILE)));
			break;
		case WC_FOLLOW_LOCKED:
			ereport(LOG,
					(errmsg("cannot read the primary's published hot set now"),
					 errdetail("A session, or the replay of a lock taken on the primary, holds a lock on %s. The standby does not wait: it tries again at each look, and its own dumps go on.",
							   problem ? problem : "its table")));
			break;
		case WC_FOLLOW_REFUSED:
			ereport(LOG,
					(errmsg("the standby channel's table is not the one the extension made: %s",
							problem ? problem : "unknown problem"),
					 errdetail("Nothing is read from it until that changes.")));
			break;
		case WC_FOLLOW_FOLLOWING:
			ereport(LOG,
					(errmsg("following the primary's hot set")));
			break;
	}
}

/*
 * The channel's notes, in its shared memory.  One channel worker runs at a
 * time, and the autowarm worker that starts it waits for its end, so the
 * notes need no lock.
 */
ChannelNotes *
wc_channel_notes(void)
{
	return &channel->notes;
}

/*
 * Log what a publication found if it differs from what the last one did
 * (each time without notes).
 */
void
wc_channel_note_outcome(ChannelNotes *notes, PublishOutcome outcome,
						const char *what)
{
	if (notes != NULL)
	{
		PublishOutcome old = notes->last_publish;

		notes->last_publish = outcome;
		if (old == outcome)
		{
			if (outcome == WC_PUBLISH_LOCKED)
				elog(DEBUG1, "%s is locked: publication skipped again",
					 what);
			return;
		}
	}

	switch (outcome)
	{
		case WC_PUBLISH_DONE:
			if (notes != NULL)
				ereport(LOG,
						(errmsg("publishing the hot set again")));
			break;
		case WC_PUBLISH_LOCKED:
			ereport(LOG,
					(errmsg("cannot publish the hot set now"),
					 errdetail("A session holds a lock on %s. Publication does not wait: it is tried again every few seconds, and dumps go on.",
							   what)));
			break;
		case WC_PUBLISH_FAILED:
			ereport(LOG,
					(errmsg("could not publish the hot set"),
					 errdetail("The publish worker ended without committing. The dump stays pending and is published at the next look, every 5 s; the worker's error is logged above.")));
			break;
		case WC_PUBLISH_REFUSED:
			ereport(LOG,
					(errmsg("the standby channel's table is not the one the extension made: %s",
							what),
					 errdetail("Nothing is published until that changes.")));
			break;
	}
}

/* The shared memory of the channel (shmem.c). */
Size
wc_channel_shmem_size(void)
{
	return MAXALIGN(sizeof(ChannelShared));
}

/* Attach to it, making it at the first start (shmem.c). */
void
wc_channel_shmem_init(void)
{
	bool		found;

	channel = ShmemInitStruct("pg_warmcache channel", sizeof(ChannelShared),
							  &found);
	if (!found)
		memset(channel, 0, sizeof(ChannelShared));
}

/* What the channel found and follows; the status lock is held. */
void
wc_channel_status(ChannelStatus *status)
{
	status->follow_state = channel->follow_state;
	status->followed_dumped_at = channel->followed_dumped_at;
	status->followed_blocks = channel->followed_blocks;
	status->lock_holder = channel->lock_holder;
}

/*
 * A channel worker found its table locked by process pid (0: it got its
 * locks, or the holder was not seen).  Kept until the next worker looks, so
 * that the status names who keeps the channel waiting.
 */
void
wc_channel_note_lock_holder(int pid)
{
	wc_status_lock(LW_EXCLUSIVE);
	channel->lock_holder = pid;
	wc_status_unlock();
}

/* The standby was promoted: it follows no primary any more. */
void
wc_channel_note_promoted(void)
{
	wc_status_lock(LW_EXCLUSIVE);
	channel->follow_state = WC_FOLLOW_PROMOTED;
	wc_status_unlock();
}

/* Whether a dump waits to be published. */
bool
wc_publish_pending(void)
{
	DumpStatus	dump;

	wc_status_lock(LW_SHARED);
	wc_dump_status(&dump);
	wc_status_unlock();
	return dump.dumps != channel->published_dumps;
}

/* The dumps up to the seq'th are dealt with, unless later ones were. */
void
wc_channel_note_published(uint64 seq)
{
	wc_status_lock(LW_EXCLUSIVE);
	if (channel->published_dumps < seq)
		channel->published_dumps = seq;
	wc_status_unlock();
}

/*
 * The number (DumpStatus.dumps) of the dump that waits to be published, or
 * 0 if none does.  Where WAL carries nothing for standbys (wal_level
 * minimal), no dump ever will be: each is dealt with as it comes.
 */
uint64
wc_channel_dump_to_publish(void)
{
	DumpStatus	dump;
	uint64		seq;

	wc_status_lock(LW_EXCLUSIVE);
	wc_dump_status(&dump);
	seq = dump.dumps != channel->published_dumps ? dump.dumps : 0;
	if (!XLogStandbyInfoActive())
		channel->published_dumps = dump.dumps;
	wc_status_unlock();
	return seq;
}

/* The dump time of the followed file, or 0: the channel worker's own. */
TimestampTz
wc_channel_followed_dumped_at(void)
{
	return channel->followed_dumped_at;
}

/*
 * The followed file is now the publication hdr describes: named in the
 * status, and its pass due, in one update (operation.c).
 */
void
wc_channel_note_followed(const WarmFileHeader *hdr)
{
	wc_status_lock(LW_EXCLUSIVE);
	channel->followed_dumped_at = hdr->dumped_at;
	channel->followed_blocks = (int64) hdr->nblocks;
	wc_note_follow_pass_due();
	wc_status_unlock();
}

/*
 * After a restart the followed file is there, but the shared state knows
 * nothing of it: hdr, its header, names it again, with no pass due (the
 * file was followed before the restart).  Only if nothing is known yet.
 */
void
wc_channel_remember_followed(const WarmFileHeader *hdr)
{
	wc_status_lock(LW_EXCLUSIVE);
	if (channel->followed_dumped_at == 0)
	{
		channel->followed_dumped_at = hdr->dumped_at;
		channel->followed_blocks = (int64) hdr->nblocks;
	}
	wc_status_unlock();
}
