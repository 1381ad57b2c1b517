/* SPDX-License-Identifier: Apache-2.0 */
/* main() for every Check suite: each test file defines test_suite(). */
#include <check.h>
#include <stdlib.h>

#include "common.h"

int main(void)
{
	SRunner *sr = srunner_create(test_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
