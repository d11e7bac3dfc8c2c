/*-------------------------------------------------------------------------
 *
 * channel_key.c
 *		The key that signs the standby channel's rows.
 *
 * A standby follows only rows that its primary signed (pubrow.c), so the
 * key must be one that the primary and its standbys hold and no other role
 * can read.  Two sources, the first that exists:
 *
 * - the file pg_warmcache.key in the data directory, written by the DBA
 *   (64 hex digits, a newline allowed), to rotate the key or to tell apart
 *   clusters cloned from one base backup.  It must be the server user's, a
 *   regular file, and neither readable nor writable by others.  It goes to
 *   standbys as every file of the data directory does, with a base backup,
 *   pg_rewind or a copy; written later, it must be copied to each standby.
 * - otherwise the cluster's own: HMAC-SHA256 keyed by the mock
 *   authentication nonce of pg_control, over a label.  That nonce is 32
 *   random bytes made by initdb; base backups and pg_rewind copy pg_control,
 *   so every standby holds it, those made before 1.6 included, and no SQL
 *   function shows it.
 *
 * What this relies on of PostgreSQL, which t/081_channel_key.pl checks:
 *
 * 1. GetMockAuthenticationNonce() (access/xlog.h) returns
 *    MOCK_AUTH_NONCE_LEN bytes, the same on a primary and on every standby
 *    made from its base backup, and different in a cluster of another
 *    initdb.
 * 2. No SQL function returns it: only reading global/pg_control, which
 *    takes superuser or pg_read_server_files (or a grant of
 *    pg_read_binary_file()), shows it.  The same roles can read
 *    pg_warmcache.key.
 * 3. PostgreSQL uses it only to make up a salt for an unknown role in SCRAM
 *    authentication, as SHA-256 over the role's name and then the nonce; the
 *    key here is an HMAC with the nonce as its key, which those salts do
 *    not reveal.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/channel_key.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "catalog/pg_control.h"
#include "common/hmac.h"
#include "storage/fd.h"

#include "channel_key.h"

/* What the cluster's nonce is keyed over; a new label makes a new key. */
#define WC_KEY_LABEL		"pg_warmcache standby channel key 1"

/* The key file's size at most: 64 hex digits and a newline, or CRLF. */
#define WC_KEY_FILE_MAX		(WC_KEY_BYTES * 2 + 2)

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The key of WC_KEY_FILE, which exists: false, with *problem, if it is not
 * the server user's regular file, others may read or write it, or it does
 * not hold 64 hex digits.
 */
static bool
key_from_file(uint8 *key, char **problem)
{
	char		buf[WC_KEY_FILE_MAX + 1];
	struct stat st;
	int			fd;
	ssize_t		len;
	int			save_errno;
	int			i;
	bool		ok = true;

	*problem = NULL;

	/*
	 * What is checked is the file opened, not a name that could be swapped
	 * between a look and the open; a link is not followed.
	 */
	fd = OpenTransientFile(WC_KEY_FILE, O_RDONLY | O_NOFOLLOW | PG_BINARY);
	if (fd < 0)
	{
		*problem = psprintf("could not open \"%s\": %m", WC_KEY_FILE);
		return false;
	}
	if (fstat(fd, &st) != 0)
	{
		save_errno = errno;
		CloseTransientFile(fd);
		errno = save_errno;
		*problem = psprintf("could not stat \"%s\": %m", WC_KEY_FILE);
		return false;
	}
	if (!S_ISREG(st.st_mode))
		*problem = psprintf("\"%s\" is not a regular file", WC_KEY_FILE);
	else if (st.st_uid != geteuid())
		*problem = psprintf("\"%s\" is not owned by the server's user",
							WC_KEY_FILE);
	else if ((st.st_mode & (S_IWGRP | S_IRWXO)) != 0)
		*problem = psprintf("\"%s\" can be read or written by others than the server's user (mode %04o)",
							WC_KEY_FILE, (unsigned) (st.st_mode & 07777));
	if (*problem != NULL)
	{
		CloseTransientFile(fd);
		return false;
	}
	len = read(fd, buf, sizeof(buf));
	save_errno = errno;
	CloseTransientFile(fd);
	if (len < 0)
	{
		errno = save_errno;
		*problem = psprintf("could not read \"%s\": %m", WC_KEY_FILE);
		return false;
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	if (len != WC_KEY_BYTES * 2)
		ok = false;
	for (i = 0; ok && i < WC_KEY_BYTES; i++)
	{
		int			hi = hex_digit(buf[2 * i]);
		int			lo = hex_digit(buf[2 * i + 1]);

		if (hi < 0 || lo < 0)
			ok = false;
		else
			key[i] = (uint8) (hi << 4 | lo);
	}
	explicit_bzero(buf, sizeof(buf));
	if (!ok)
	{
		explicit_bzero(key, WC_KEY_BYTES);
		*problem = psprintf("\"%s\" does not hold %d hexadecimal digits",
							WC_KEY_FILE, WC_KEY_BYTES * 2);
	}
	return ok;
}

/* The cluster's own key, from pg_control's nonce. */
static bool
key_from_cluster(uint8 *key, char **problem)
{
	pg_hmac_ctx *ctx = pg_hmac_create(PG_SHA256);
	bool		ok;

	if (ctx == NULL)
	{
		*problem = pstrdup("out of memory");
		return false;
	}
	ok = pg_hmac_init(ctx, (const uint8 *) GetMockAuthenticationNonce(),
					  MOCK_AUTH_NONCE_LEN) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) WC_KEY_LABEL,
					   strlen(WC_KEY_LABEL)) == 0 &&
		pg_hmac_final(ctx, key, WC_KEY_BYTES) == 0;
	if (!ok)
		*problem = psprintf("could not compute the key: %s",
							pg_hmac_error(ctx));
	pg_hmac_free(ctx);
	return ok;
}

/*
 * The channel's key, WC_KEY_BYTES of them into key, and where it came
 * from.  Read afresh at each call: a worker asks once per publication or
 * look, so a new key file counts from the next one.  False, with
 * *problem, if the key file exists and cannot be used: then no key is
 * used at all, since the DBA meant that file to be the key.
 */
bool
wc_channel_key(uint8 *key, ChannelKeySource *source, char **problem)
{
	struct stat st;

	if (lstat(WC_KEY_FILE, &st) == 0)
	{
		*source = WC_KEY_FILE_SOURCE;
		return key_from_file(key, problem);
	}
	if (errno != ENOENT)
	{
		*problem = psprintf("could not stat \"%s\": %m", WC_KEY_FILE);
		return false;
	}
	*source = WC_KEY_CLUSTER;
	return key_from_cluster(key, problem);
}
