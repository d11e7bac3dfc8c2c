/*-------------------------------------------------------------------------
 *
 * lookahead.c
 *		The engine's look-ahead: the segment files of a relation fork, and
 *		advice to the kernel (posix_fadvise WILLNEED) in pieces sized by the
 *		device, ahead of the blocks being warmed.
 *
 * The kernel reads at most max(max_sectors_kb, read_ahead_kb) of one
 * WILLNEED call and drops the rest, so the pieces are as large as the
 * device takes in one I/O; ranges separated by small gaps are advised as
 * one, so that a volume that limits I/O operations per second sees one
 * large read instead of many small ones.  Segment files are opened by
 * path through fd.c, and closed by their owner on every way out.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/lookahead.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#include <sys/sysmacros.h>
#endif

#include "storage/fd.h"
#include "utils/wait_event.h"

#include "lookahead.h"

/*
 * Advice pieces: as large as the device takes in one I/O (its
 * max_sectors_kb), within these bounds; WC_IO_BLOCKS where it is not known.
 * The kernel reads at most max(max_sectors_kb, read_ahead_kb) of one
 * posix_fadvise(WILLNEED) call and drops the rest, so a piece must never be
 * larger than that.
 */
#define WC_MIN_PIECE	4
#define WC_MAX_PIECE	512

/* The path of a segment file, palloc'd. */
char *
wc_seg_path(SegFile *sf, BlockNumber segno)
{
	return segno == 0 ? pstrdup(sf->path) : psprintf("%s.%u", sf->path, segno);
}

/*
 * The open file of the segment holding block, opening it when needed.
 * Returns -1 if the segment does not exist (the relation shrank).
 */
File
wc_seg_file(SegFile *sf, BlockNumber block)
{
	BlockNumber segno = block / RELSEG_SIZE;
	char	   *p;

	if (sf->file >= 0 && sf->segno == segno)
		return sf->file;
	wc_seg_close(sf);
	sf->segno = segno;
	p = wc_seg_path(sf, segno);
	sf->file = PathNameOpenFile(p, O_RDONLY | PG_BINARY);
	pfree(p);
	if (sf->file < 0 && errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\" (segment %u): %m",
						sf->path, segno)));
	return sf->file;
}

void
wc_seg_close(SegFile *sf)
{
	if (sf->file >= 0)
		FileClose(sf->file);
	sf->file = -1;
#ifdef __linux__
	if (sf->map != NULL)
		munmap(sf->map, (Size) RELSEG_SIZE * BLCKSZ);
#endif
	sf->map = NULL;
	sf->unmappable = false;
}

/*
 * Blocks the device of an open file takes in one I/O: its max_sectors_kb,
 * from sysfs (the queue of the device, or of the disk of a partition).
 * Where that is not known (another system, a file system without a block
 * device of its own), WC_IO_BLOCKS.  Remembered for the last device.
 */
BlockNumber
wc_device_piece(File f)
{
	static dev_t last_dev = 0;
	static BlockNumber last_piece = 0;
	BlockNumber piece = WC_IO_BLOCKS;
#ifdef __linux__
	struct stat st;
	int			fd = FileGetRawDesc(f);

	if (fd < 0 || fstat(fd, &st) != 0)
		return WC_IO_BLOCKS;
	if (last_piece != 0 && st.st_dev == last_dev)
		return last_piece;
	{
		static const char *const fmt[] = {
			"/sys/dev/block/%u:%u/queue/max_sectors_kb",
			"/sys/dev/block/%u:%u/../queue/max_sectors_kb"
		};
		int			i;

		for (i = 0; i < lengthof(fmt); i++)
		{
			char		path[MAXPGPATH];
			FILE	   *fp;
			long		kb = 0;

			snprintf(path, sizeof(path), fmt[i],
					 major(st.st_dev), minor(st.st_dev));
			fp = AllocateFile(path, "r");
			if (fp == NULL)
				continue;
			if (fscanf(fp, "%ld", &kb) == 1 && kb > 0)
				piece = (BlockNumber) Max(WC_MIN_PIECE,
										  Min(WC_MAX_PIECE, kb * 1024 / BLCKSZ));
			FreeFile(fp);
			break;
		}
	}
	last_dev = st.st_dev;
	last_piece = piece;
#endif
	return piece;
}

/*
 * Ranges separated by gaps of at most this many blocks are advised as one:
 * the device then sees one large read instead of many small ones, which
 * matters on volumes that limit I/O operations per second.  The gaps only
 * reach the OS cache.
 */
#define WC_ADVICE_GAP	16

/* Advise the kernel about blocks [start, end) of one segment. */
static void
advise_flush(SegFile *sf, BlockNumber start, BlockNumber end)
{
	File		f;

	if (end <= start)
		return;
	f = wc_seg_file(sf, start);
	if (f >= 0)
		(void) FilePrefetch(f, (off_t) (start % RELSEG_SIZE) * BLCKSZ,
							(off_t) (end - start) * BLCKSZ,
							WAIT_EVENT_DATA_FILE_PREFETCH);
}

/*
 * Advise the kernel about blocks from the advice cursor on, until it is
 * target blocks past the start of the range list or beyond, in pieces of
 * at most piece blocks (the last one may end past target), bridging gaps
 * of up to WC_ADVICE_GAP blocks.
 */
void
wc_advise_until(RangeCursor *adv, uint64 *advised, uint64 target, SegFile *sf,
				BlockNumber piece)
{
	BlockNumber pstart = 0;
	BlockNumber pend = 0;		/* pending advice [pstart, pend) */

	while (*advised < target && !wc_cursor_done(adv))
	{
		BlockNumber block = wc_cursor_block(adv);
		BlockNumber room = piece;
		BlockNumber n;

		if (pend > pstart &&
			block / RELSEG_SIZE == pstart / RELSEG_SIZE &&
			block >= pend && block - pend <= WC_ADVICE_GAP &&
			block - pstart < piece)
			room = piece - (block - pstart);
		else
		{
			advise_flush(sf, pstart, pend);
			pstart = block;
		}
		n = wc_cursor_piece(adv, room);
		pend = block + n;
		wc_cursor_advance(adv, n);
		*advised += n;
	}
	advise_flush(sf, pstart, pend);
}
