// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>

#include "array.h"

int array__reserve(void **items, size_t *cap, size_t need, size_t elem)
{
	size_t new_cap;
	void *grown;

	if (need <= *cap)
		return 0;
	new_cap = *cap ? *cap * 2 : 8;
	while (new_cap < need)
		new_cap *= 2;
	grown = reallocarray(*items, new_cap, elem);
	if (!grown)
		return -ENOMEM;
	*items = grown;
	*cap = new_cap;
	return 0;
}
