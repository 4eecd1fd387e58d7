/*-------------------------------------------------------------------------
 *
 * tls.c
 *	  TLS of mq-rocketmq's listener (--tls-cert, --tls-key): OpenSSL's
 *	  server context, and the TLS bufferevent (libevent's
 *	  bufferevent_openssl) a connection's HTTP/2 runs on.
 *
 * With a certificate and key the listener speaks TLS only: TLS 1.2 or
 * later, AEAD ciphers with forward secrecy for TLS 1.2 (what RFC 9113 9.2
 * asks of HTTP/2), and ALPN must select "h2", as gRPC clients offer it: a
 * client that offers no ALPN, or no "h2", fails its handshake (alert
 * no_application_protocol) with a log line saying so.  The key file holds a
 * secret: the same rule as the credentials file (config.c's
 * open_private_file).  Nothing here touches HTTP/2 or a stream.
 *
 *-------------------------------------------------------------------------
 */
#include "rmq.h"

#include <string.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

static SSL_CTX *tls_ctx;

/* the one ALPN protocol served, in ALPN's wire format */
static const unsigned char alpn_h2[] = {2, 'h', '2'};

/* OpenSSL error e after the n bytes in buf, "; "-separated: the new n */
static size_t
add_error(char *buf, size_t len, size_t n, unsigned long e)
{
	if (n > 0 && n + 3 < len)
	{
		memcpy(buf + n, "; ", 3);
		n += 2;
	}
	if (n + 1 < len)
		ERR_error_string_n(e, buf + n, len - n);
	return n + strlen(buf + n);
}

/* OpenSSL's queued errors, oldest first, into buf */
static const char *
ssl_errors(char *buf, size_t len)
{
	unsigned long e;
	size_t		n = 0;

	buf[0] = '\0';
	while ((e = ERR_get_error()) != 0)
		n = add_error(buf, len, n, e);
	if (buf[0] == '\0')
		snprintf(buf, len, "no OpenSSL error");
	return buf;
}

/* an encrypted key is not supported: never ask for a passphrase */
static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return -1;
}

/* the protocols of an ALPN list (wire format), comma-separated, into buf */
static void
alpn_list(const unsigned char *in, size_t inlen, char *buf, size_t len)
{
	size_t		i = 0,
				n = 0;

	buf[0] = '\0';
	while (i < inlen && n + 4 < len)
	{
		size_t		l = in[i++];

		if (l > inlen - i)
			break;
		n += snprintf(buf + n, len - n, "%s\"%.*s\"", n ? ", " : "", (int) l, in + i);
		if (n >= len)
			break;
		i += l;
	}
}

/* a ClientHello without ALPN is refused: gRPC clients offer "h2" */
static int
on_client_hello(SSL *ssl, int *alert, void *arg)
{
	const unsigned char *ext;
	size_t		len;

	if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation,
								  &ext, &len) == 1)
		return SSL_CLIENT_HELLO_SUCCESS;
	logmsg("%s: TLS client offers no ALPN protocol; gRPC needs \"h2\": refused",
		   (const char *) SSL_get_app_data(ssl));
	*alert = SSL_AD_NO_APPLICATION_PROTOCOL;
	return SSL_CLIENT_HELLO_ERROR;
}

/* ALPN selects "h2", or the handshake fails */
static int
on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		const unsigned char *in, unsigned int inlen, void *arg)
{
	char		offered[256];

	if (SSL_select_next_proto((unsigned char **) out, outlen, alpn_h2, sizeof(alpn_h2),
							  in, inlen) == OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_OK;
	alpn_list(in, inlen, offered, sizeof(offered));
	logmsg("%s: TLS client offers ALPN %s, not \"h2\" (gRPC): refused",
		   (const char *) SSL_get_app_data(ssl), offered);
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/*
 * The server's context from a PEM certificate file (the server's
 * certificate, then any intermediate certificates) and a PEM key file (not
 * encrypted, mode 0600 or stricter): exits when either cannot be used or
 * they do not match
 */
void
tls_init(const char *cert_path, const char *key_path)
{
	FILE	   *f = open_private_file(key_path, "TLS key file");
	EVP_PKEY   *key = PEM_read_PrivateKey(f, NULL, no_passphrase, NULL);
	char		err[512];
	X509	   *cert;
	char		subject[256];

	fclose(f);
	if (key == NULL)
		die("TLS key file \"%s\" holds no unencrypted PEM private key: %s", key_path,
			ssl_errors(err, sizeof(err)));
	tls_ctx = SSL_CTX_new(TLS_server_method());
	if (tls_ctx == NULL)
		die("cannot make a TLS context: %s", ssl_errors(err, sizeof(err)));
	SSL_CTX_set_min_proto_version(tls_ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(tls_ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
						SSL_OP_CIPHER_SERVER_PREFERENCE);
	/*
	 * an idle connection keeps no read and write buffers, and no session is
	 * kept after its connection (OpenSSL's server cache would hold up to
	 * 20,480; resumption by ticket still works): bench/README.md, TLS
	 */
	SSL_CTX_set_mode(tls_ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_cache_mode(tls_ctx, SSL_SESS_CACHE_OFF);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF

	/*
	 * a client that closes without close_notify has ended, as with
	 * OpenSSL 1.1 (libevent 2.1 knows that as a dirty shutdown only); HTTP/2
	 * frames its data, so a cut is no truncation it would take for an end
	 */
	SSL_CTX_set_options(tls_ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
	/* TLS 1.2: what HTTP/2 allows (TLS 1.3's suites are all AEAD) */
	if (SSL_CTX_set_cipher_list(tls_ctx, "ECDHE+AESGCM:ECDHE+CHACHA20") != 1)
		die("cannot set the TLS ciphers: %s", ssl_errors(err, sizeof(err)));
	if (SSL_CTX_use_certificate_chain_file(tls_ctx, cert_path) != 1)
		die("cannot use TLS certificate file \"%s\" (PEM: the certificate, then its chain): %s",
			cert_path, ssl_errors(err, sizeof(err)));
	if (SSL_CTX_use_PrivateKey(tls_ctx, key) != 1 || SSL_CTX_check_private_key(tls_ctx) != 1)
		die("TLS key file \"%s\" does not match the certificate of \"%s\": %s", key_path,
			cert_path, ssl_errors(err, sizeof(err)));
	EVP_PKEY_free(key);
	SSL_CTX_set_client_hello_cb(tls_ctx, on_client_hello, NULL);
	SSL_CTX_set_alpn_select_cb(tls_ctx, on_alpn, NULL);
	cert = SSL_CTX_get0_certificate(tls_ctx);
	X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof(subject));
	logmsg("TLS: certificate %s (\"%s\")", subject, cert_path);
}

bool
tls_enabled(void)
{
	return tls_ctx != NULL;
}

struct bufferevent *
tls_bufferevent(evutil_socket_t fd, const char *peer)
{
	SSL		   *ssl = SSL_new(tls_ctx);
	struct bufferevent *bev;

	if (ssl == NULL)
		return NULL;
	SSL_set_app_data(ssl, (void *) peer);
	/* frees ssl when it fails, and with the bufferevent */
	bev = bufferevent_openssl_socket_new(rmq_base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
										 BEV_OPT_CLOSE_ON_FREE);
	/* a client that closes without close_notify: an end, not an error */
	if (bev)
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

/*
 * Why the TLS bufferevent bev failed (after BEV_EVENT_ERROR), into buf;
 * bytes that are no TLS record are most likely a client without TLS
 */
const char *
tls_error(struct bufferevent *bev, char *buf, size_t len)
{
	unsigned long e;
	size_t		n = 0;
	bool		plain = false;

	buf[0] = '\0';
	while ((e = bufferevent_get_openssl_error(bev)) != 0)
	{
		/* libevent adds SSL_get_error's code, not an OpenSSL error */
		if (ERR_GET_LIB(e) == 0)
			continue;
		if (ERR_GET_LIB(e) == ERR_LIB_SSL &&
			(ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER ||
			 ERR_GET_REASON(e) == SSL_R_HTTP_REQUEST ||
			 ERR_GET_REASON(e) == SSL_R_HTTPS_PROXY_REQUEST))
			plain = true;
		n = add_error(buf, len, n, e);
	}
	ERR_clear_error();
	if (buf[0] == '\0')
		snprintf(buf, len, "the connection failed");
	if (plain)
		snprintf(buf + n, len - n, " (not TLS: a client without TLS, e.g. sslEnabled false?)");
	return buf;
}

/* the protocol version and cipher the handshake of bev agreed, into buf */
void
tls_describe(struct bufferevent *bev, char *buf, size_t len)
{
	SSL		   *ssl = bufferevent_openssl_get_ssl(bev);

	snprintf(buf, len, "%s, %s", SSL_get_version(ssl), SSL_get_cipher_name(ssl));
}
