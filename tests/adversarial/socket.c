// expect: link_forbidden
#include <pragma/kernel.h>
#include <arpa/inet.h>
#include <sys/socket.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(80) };
    int s = socket(AF_INET, SOCK_STREAM, 0);
    inet_pton(AF_INET, "93.184.216.34", &sa.sin_addr);
    connect(s, (struct sockaddr *)&sa, sizeof(sa));
    return 0;
}
