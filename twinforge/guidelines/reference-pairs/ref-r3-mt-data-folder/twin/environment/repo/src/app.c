#include <stdio.h>
int main(void) { puts("inventory report"); return 0; }
