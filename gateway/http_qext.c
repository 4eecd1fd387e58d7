#include "gateway.h"

void
http_qext(HttpReq *r)
{
	http_not_found(r);
}
