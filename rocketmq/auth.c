/*-------------------------------------------------------------------------
 *
 * auth.c
 *	  The check of RocketMQ's request signatures: the credentials file and
 *	  the role a request acts as.
 *
 * Logins: a RocketMQ client signs each request's x-mq-date-time with its
 * secret key (MQv2-HMAC-SHA1).  PostgreSQL's password hashes cannot check
 * that, so the gateway holds a credentials file (--credentials, mode 0600
 * or stricter) mapping each access key to its secret key and a PostgreSQL
 * role: it checks the signature and the date's freshness, then runs the
 * request's SQL as that role (SET ROLE from its own login role, which must
 * be a member of it), so that queue_ext's privileges apply.  Unsigned
 * requests are refused, unless --insecure-loopback-role names a role for
 * them (development only: the gateway must then listen on loopback).
 *
 *-------------------------------------------------------------------------
 */
#include "rmq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

typedef struct Credential
{
	char	   *access_key;
	char	   *secret_key;
	char	   *role;
} Credential;

static Credential *credentials;
static int	n_credentials;

/*
 * Read the credentials file: one "access_key secret_key role" a line, '#'
 * comments.  It holds secrets: refused unless only its owner may read it.
 */
void
auth_read_credentials(const char *path)
{
	FILE	   *f = open_private_file(path, "credentials file");
	char		line[1024];
	int			lineno = 0;

	while (fgets(line, sizeof(line), f))
	{
		char	   *ak,
				   *sk,
				   *role,
				   *extra,
				   *save = NULL;

		lineno++;
		if (strchr(line, '#'))
			*strchr(line, '#') = '\0';
		ak = strtok_r(line, " \t\r\n", &save);
		if (ak == NULL)
			continue;
		sk = strtok_r(NULL, " \t\r\n", &save);
		role = strtok_r(NULL, " \t\r\n", &save);
		extra = strtok_r(NULL, " \t\r\n", &save);
		if (sk == NULL || role == NULL || extra != NULL)
			die("credentials file \"%s\", line %d: expected \"access_key secret_key role\"",
				path, lineno);
		credentials = realloc(credentials, (n_credentials + 1) * sizeof(Credential));
		credentials[n_credentials].access_key = strdup(ak);
		credentials[n_credentials].secret_key = strdup(sk);
		credentials[n_credentials].role = strdup(role);
		n_credentials++;
	}
	fclose(f);
}

/* x-mq-date-time (yyyyMMddTHHmmssZ, UTC) as a time; -1 if malformed */
static time_t
parse_date_time(const char *s)
{
	struct tm	tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y%m%dT%H%M%SZ", &tm);
	if (end == NULL || *end != '\0')
		return -1;
	return timegm(&tm);
}

/* the value of "name=" in a comma-separated authorization header, copied */
static bool
auth_field(const char *header, const char *name, char *out, size_t outlen)
{
	const char *p = header;
	size_t		nl = strlen(name);

	while ((p = strstr(p, name)) != NULL)
	{
		if ((p == header || p[-1] == ' ' || p[-1] == ',') && p[nl] == '=')
		{
			const char *v = p + nl + 1;
			size_t		n = strcspn(v, ", ");

			if (n >= outlen)
				return false;
			memcpy(out, v, n);
			out[n] = '\0';
			return true;
		}
		p += nl;
	}
	return false;
}

const char *
auth_role(const char *authorization, const char *date_time, int *code,
		  char *why, size_t whylen)
{
	char		ak[256],
				sig[128],
				expect[2 * EVP_MAX_MD_SIZE + 1];
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	int			i;
	Credential *cred = NULL;
	time_t		when;

	*code = CODE(UNAUTHORIZED);
	if (authorization[0] == '\0')
	{
		if (rmq_insecure_role)
			return rmq_insecure_role;
		snprintf(why, whylen, "this gateway needs signed requests (an access key and secret key)");
		return NULL;
	}
	if (strncmp(authorization, "MQv2-HMAC-SHA1 ", 15) != 0 ||
		!auth_field(authorization + 15, "Credential", ak, sizeof(ak)) ||
		!auth_field(authorization + 15, "Signature", sig, sizeof(sig)))
	{
		snprintf(why, whylen, "malformed authorization header (expected MQv2-HMAC-SHA1)");
		return NULL;
	}
	for (i = 0; i < n_credentials; i++)
		if (strcmp(credentials[i].access_key, ak) == 0)
			cred = &credentials[i];
	if (cred == NULL)
	{
		snprintf(why, whylen, "unknown access key");
		return NULL;
	}
	when = parse_date_time(date_time);
	if (when < 0 || when < time(NULL) - rmq_max_clock_skew || when > time(NULL) + rmq_max_clock_skew)
	{
		snprintf(why, whylen, "x-mq-date-time is missing or more than %d s away from the gateway's clock",
				 rmq_max_clock_skew);
		return NULL;
	}
	HMAC(EVP_sha1(), cred->secret_key, (int) strlen(cred->secret_key),
		 (const unsigned char *) date_time, strlen(date_time), mac, &maclen);
	for (i = 0; i < (int) maclen; i++)
		sprintf(expect + 2 * i, "%02X", mac[i]);
	for (i = 0; sig[i]; i++)
		if (sig[i] >= 'a' && sig[i] <= 'f')
			sig[i] -= 'a' - 'A';
	if (strlen(sig) != 2 * maclen || CRYPTO_memcmp(sig, expect, 2 * maclen) != 0)
	{
		snprintf(why, whylen, "signature does not match");
		return NULL;
	}
	return cred->role;
}
