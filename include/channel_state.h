/*-------------------------------------------------------------------------
 *
 * channel_state.h
 *		The standby channel's shared state and what it found
 *		(channel_state.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/channel_state.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_CHANNEL_STATE_H
#define PG_WARMCACHE_CHANNEL_STATE_H

#include "datatype/timestamp.h"

#include "format.h"

/* The database where the channel's table lives, on every server. */
#define WC_CHANNEL_DATABASE		"postgres"
#define WC_CHANNEL_TABLE		"warmcache_published"

/* What a publication found. */
typedef enum PublishOutcome
{
	WC_PUBLISH_DONE,
	WC_PUBLISH_LOCKED,
	WC_PUBLISH_REFUSED,
	WC_PUBLISH_FAILED			/* the worker ended without committing */
} PublishOutcome;

/*
 * What the channel workers remember from one start to the next, in the
 * channel's shared memory: so that a table that stays locked
 * or unusable is logged once, not at every try, and a publication found
 * unusable is not read again.
 */
typedef struct ChannelNotes
{
	PublishOutcome last_publish;	/* what the last publication found */
	bool		publish_ended;	/* the publish worker got to an outcome */
	bool		publish_handled;	/* and the dump needs no other try */
	int64		refused_dumped_at;	/* TimestampTz: the dump time of the last
									 * publication found unusable, or 0 */
} ChannelNotes;

/* What the channel last found; a change is logged once. */
typedef enum FollowState
{
	WC_FOLLOW_NOT_LOOKED,
	WC_FOLLOW_NO_DATABASE,		/* no database postgres to read it in */
	WC_FOLLOW_NO_TABLE,			/* no extension, or one older than 1.2 */
	WC_FOLLOW_NOTHING_PUBLISHED,	/* the table is empty */
	WC_FOLLOW_UNUSABLE,			/* what it holds is not a usable file */
	WC_FOLLOW_NOT_SIGNED,		/* a row is not signed with this cluster's key */
	WC_FOLLOW_NO_KEY,			/* the key file cannot be used */
	WC_FOLLOW_LOCKED,			/* it was locked: tried again at next look */
	WC_FOLLOW_REFUSED,			/* it is not the table the extension made */
	WC_FOLLOW_FOLLOWING,
	WC_FOLLOW_PROMOTED			/* the standby was promoted */
} FollowState;

/* What warmcache_status() and readiness report of the channel. */
typedef struct ChannelStatus
{
	FollowState follow_state;
	TimestampTz followed_dumped_at;
	int64		followed_blocks;
	int			lock_holder;	/* pid, or 0: see wc_channel_note_lock_holder() */
} ChannelStatus;

extern Size wc_channel_shmem_size(void);
extern void wc_channel_shmem_init(void);
extern void wc_channel_status(ChannelStatus *status);
extern const char *wc_follow_state_name(FollowState state);
extern void wc_channel_set_follow_state(FollowState state, const char *problem,
										bool again);
extern void wc_channel_note_promoted(void);
extern void wc_channel_note_lock_holder(int pid);
extern ChannelNotes *wc_channel_notes(void);
extern void wc_channel_note_outcome(ChannelNotes *notes, PublishOutcome outcome,
									const char *why);
extern bool wc_publish_pending(void);
extern uint64 wc_channel_dump_to_publish(void);
extern void wc_channel_note_published(uint64 seq);
extern TimestampTz wc_channel_followed_dumped_at(void);
extern void wc_channel_note_followed(const WarmFileHeader *hdr);
extern void wc_channel_remember_followed(const WarmFileHeader *hdr);

#endif							/* PG_WARMCACHE_CHANNEL_STATE_H */
