// expect: link_forbidden
#include <pragma/kernel.h>
#include <stdlib.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    return system("curl -s http://example.com/answer > /dev/null");
}
