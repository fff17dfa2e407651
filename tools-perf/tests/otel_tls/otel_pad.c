// SPDX-License-Identifier: GPL-2.0
/* A library loaded before the writer, with TLS that moves the writer's block */
#include <linux/compiler.h>

__thread char otel_pad_tls[40] __aligned(32) = { 1 };
__thread int otel_pad_counter;

int otel_pad_touch(void)
{
	return otel_pad_tls[0] + otel_pad_counter++;
}
