/*-------------------------------------------------------------------------
 *
 * fuzz_support.c
 *		What the fuzz harnesses need of the server, without a server.
 *
 * The harnesses link the module's file, delta and row code (dumpfile.c,
 * runcodec.c, pubdelta.c, pubrow.c) against these stand-ins: memory that
 * is all released after each input, files through stdio, this system's
 * identifier as a constant, and an ereport() that aborts at ERROR, since
 * nothing a harness calls may raise one on any input (a checked file is
 * read without error; a bad one is refused in words).  What dumpfile.c
 * needs only to dump (buffer headers, locks, the OS tier's walk) aborts if
 * called.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		test/fuzz/fuzz_support.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dumpfile.h"
#include "fuzz_support.h"

/* Memory: a list of blocks, all freed by fuzz_reset(). */
typedef struct Chunk
{
	struct Chunk *prev;
	struct Chunk *next;
	Size		size;
	max_align_t pad[];
} Chunk;

static Chunk *chunks;

static void *
chunk_alloc(Size size, bool zero)
{
	Chunk	   *c;

	if (size > MaxAllocSize)
		fuzz_fail("palloc of %zu bytes, more than MaxAllocSize", size);
	c = zero ? calloc(1, sizeof(Chunk) + size) : malloc(sizeof(Chunk) + size);
	if (c == NULL)
		fuzz_fail("out of memory");
	c->size = size;
	c->prev = NULL;
	c->next = chunks;
	if (chunks)
		chunks->prev = c;
	chunks = c;
	return c->pad;
}

void *
palloc(Size size)
{
	return chunk_alloc(size, false);
}

void *
palloc0(Size size)
{
	return chunk_alloc(size, true);
}

void
pfree(void *p)
{
	Chunk	   *c = (Chunk *) ((char *) p - offsetof(Chunk, pad));

	if (c->prev)
		c->prev->next = c->next;
	else
		chunks = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

void *
repalloc(void *p, Size size)
{
	Chunk	   *c = (Chunk *) ((char *) p - offsetof(Chunk, pad));
	void	   *n = palloc(size);

	memcpy(n, p, Min(size, c->size));
	pfree(p);
	return n;
}

char *
pstrdup(const char *s)
{
	char	   *p = palloc(strlen(s) + 1);

	strcpy(p, s);
	return p;
}

char *
psprintf(const char *fmt,...)
{
	va_list		ap;
	int			n;
	char	   *p;

	va_start(ap, fmt);
	n = pg_vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	p = palloc(n + 1);
	va_start(ap, fmt);
	pg_vsnprintf(p, n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void
initStringInfo(StringInfo str)
{
	str->maxlen = 1024;
	str->data = palloc(str->maxlen);
	str->len = 0;
	str->data[0] = '\0';
	str->cursor = 0;
}

void
appendBinaryStringInfo(StringInfo str, WC_BINARY_DATA *data, int datalen)
{
	if ((Size) str->len + datalen + 1 > (Size) str->maxlen)
	{
		int			want = str->maxlen;

		while ((Size) str->len + datalen + 1 > (Size) want)
			want *= 2;
		str->data = repalloc(str->data, want);
		str->maxlen = want;
	}
	memcpy(str->data + str->len, data, datalen);
	str->len += datalen;
	str->data[str->len] = '\0';
}

/* Files: stdio and descriptors, all closed by fuzz_reset(). */
#define MAX_FILES 16
static FILE *files[MAX_FILES];

FILE *
AllocateFile(const char *name, const char *mode)
{
	int			i;

	for (i = 0; i < MAX_FILES; i++)
		if (files[i] == NULL)
		{
			files[i] = fopen(name, mode);
			return files[i];
		}
	fuzz_fail("more than %d files open", MAX_FILES);
	return NULL;
}

int
FreeFile(FILE *file)
{
	int			i;

	for (i = 0; i < MAX_FILES; i++)
		if (files[i] == file)
			files[i] = NULL;
	return fclose(file);
}

int
OpenTransientFile(const char *fileName, int fileFlags)
{
	return open(fileName, fileFlags, 0600);
}

int
CloseTransientFile(int fd)
{
	return close(fd);
}

int
durable_rename(const char *oldfile, const char *newfile, int elevel)
{
	return rename(oldfile, newfile);
}

/*
 * Give the dump file of len bytes this system's identity, the current
 * version's if version, and the CRC of its bytes: a harness's input then
 * reaches the checks of its runs.
 */
void
fuzz_fix_file(uint8 *bytes, size_t len, bool version)
{
	WarmFileHeader hdr;
	pg_crc32c	crc;

	if (len < sizeof(hdr))
		return;
	memcpy(&hdr, bytes, sizeof(hdr));
	hdr.magic = WC_DUMP_MAGIC;
	if (version)
		hdr.version = WC_DUMP_VERSION;
	hdr.pg_major = PG_VERSION_NUM / 10000;
	hdr.blcksz = BLCKSZ;
	hdr.sysid = FUZZ_SYSID;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, bytes + sizeof(hdr), len - sizeof(hdr));
	COMP_CRC32C(crc, &hdr, offsetof(WarmFileHeader, crc));
	FIN_CRC32C(crc);
	hdr.crc = crc;
	memcpy(bytes, &hdr, sizeof(hdr));
}

/* Release what the last input took. */
void
fuzz_reset(void)
{
	int			i;

	for (i = 0; i < MAX_FILES; i++)
		if (files[i] != NULL)
		{
			fclose(files[i]);
			files[i] = NULL;
		}
	while (chunks)
		pfree(chunks->pad);
}

/* The server's constants and state. */
int			NBuffers = FUZZ_NBUFFERS;
volatile sig_atomic_t InterruptPending = false;
sigjmp_buf *PG_exception_stack = NULL;
ErrorContextCallback *error_context_stack = NULL;
struct Latch *MyLatch = NULL;

uint64
GetSystemIdentifier(void)
{
	return FUZZ_SYSID;
}

TimestampTz
GetCurrentTimestamp(void)
{
	return 0;
}

void
TimestampDifference(TimestampTz start_time, TimestampTz stop_time,
					long *secs, int *microsecs)
{
	fuzz_fail("TimestampDifference called");
}

const char *
timestamptz_to_str(TimestampTz t)
{
	return psprintf(INT64_FORMAT, (int64) t);
}

/* ereport(): nothing below ERROR is said; an ERROR is a finding. */
static int	cur_elevel;
static char cur_message[1024];

bool
errstart(int elevel, const char *domain)
{
	cur_elevel = elevel;
	cur_message[0] = '\0';
	return elevel >= ERROR;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

int
errmsg(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	pg_vsnprintf(cur_message, sizeof(cur_message), fmt, ap);
	va_end(ap);
	return 0;
}

int
errmsg_internal(const char *fmt,...)
	__attribute__((alias("errmsg")));

int
errdetail(const char *fmt,...)
{
	return 0;
}

int
errhint(const char *fmt,...)
{
	return 0;
}

int
errcode(int sqlerrcode)
{
	return 0;
}

int
errcode_for_file_access(void)
{
	return 0;
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	if (cur_elevel >= ERROR)
		fuzz_fail("ERROR at %s:%d: %s", filename, lineno, cur_message);
}

void
ExceptionalCondition(WC_ASSERT_PARAMS)
{
	fuzz_fail("assertion \"%s\" failed at %s:%d", conditionName, fileName,
			  lineNumber);
}

void
fuzz_fail(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz finding: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

/*
 * Files of this process: the code under test reads and writes paths, so
 * each input is written to one, in FUZZ_DIR (the script sets it; a tmpfs
 * keeps the runs fast).
 */
const char *
fuzz_path(const char *what)
{
	static char paths[8][MAXPGPATH];
	static int	next;
	const char *dir = getenv("FUZZ_DIR");
	char	   *p = paths[next++ % 8];

	snprintf(p, MAXPGPATH, "%s/fuzz-%d-%s", dir ? dir : "/tmp", (int) getpid(),
			 what);
	return p;
}

void
fuzz_write(const char *path, const uint8 *data, size_t len)
{
	FILE	   *fp = fopen(path, "wb");

	if (fp == NULL || (len > 0 && fwrite(data, len, 1, fp) != 1) ||
		fclose(fp) != 0)
		fuzz_fail("could not write \"%s\"", path);
}

/* The bytes of the file at path, in memory freed by fuzz_reset(). */
uint8 *
fuzz_read(const char *path, size_t *len)
{
	FILE	   *fp = fopen(path, "rb");
	long		size;
	uint8	   *data;

	if (fp == NULL || fseek(fp, 0, SEEK_END) != 0 || (size = ftell(fp)) < 0 ||
		fseek(fp, 0, SEEK_SET) != 0)
		fuzz_fail("could not read \"%s\"", path);
	data = palloc(size + 1);
	if (size > 0 && fread(data, size, 1, fp) != 1)
		fuzz_fail("could not read \"%s\"", path);
	fclose(fp);
	*len = (size_t) size;
	return data;
}
