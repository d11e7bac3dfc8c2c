/*-------------------------------------------------------------------------
 *
 * workload.h
 *		What the server's queries are doing, and this process's CPU time
 *		(workload.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/workload.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_WORKLOAD_H
#define PG_WARMCACHE_WORKLOAD_H

/*
 * The CPU the restore, and a dump's walk of the OS cache, take while
 * queries are busy: percent of one core.
 */
#define WC_BUSY_CPU_PERCENT 10

extern void wc_look_at_backends(bool *reading, bool *on_cpu);
extern int64 wc_cpu_time_us(void);
extern int64 wc_device_read_bytes(void);

#endif							/* PG_WARMCACHE_WORKLOAD_H */
