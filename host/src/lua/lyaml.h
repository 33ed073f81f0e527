/*
 * lyaml.h - YAML text to Lua values (lyaml.c), for the configuration.
 */
#ifndef BURROW_LYAML_H
#define BURROW_LYAML_H

#include <lua.h>

/* Sets field "yaml_decode" in the module table on top of the stack; the
 * table must already hold "json" (its null and array_mt are reused). */
void bw_yaml_register(lua_State *L);

#endif
