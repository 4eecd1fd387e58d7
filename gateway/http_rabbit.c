#include "gateway.h"

void
http_rabbit(HttpReq *r)
{
	http_not_found(r);
}
