// SPDX-License-Identifier: MIT
#include <math.h>
#include <stdint.h>

#include "entropy.h"

double shannon_entropy_bits(const void *bytes, size_t length)
{
	const unsigned char *text = bytes;
	uint32_t counts[256] = { 0 };
	double entropy = 0.0;

	for (size_t i = 0; i < length; i++)
		counts[text[i]]++;
	for (int symbol = 0; symbol < 256; symbol++) {
		double probability;

		if (counts[symbol] == 0)
			continue;
		probability = (double)counts[symbol] / (double)length;
		entropy -= probability * log2(probability);
	}
	return entropy;
}
