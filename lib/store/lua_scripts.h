/* lua_scripts: the Redis scripts of lib/store/lua/, embedded at build time by
 * scripts/embed-lua (each is common.lua followed by its own file). */
#pragma once

enum lua_script_id {
        LUA_ACQUIRE,
        LUA_CANCEL,
        LUA_EGRESS_CAS,
        LUA_EXEC_CREATE,
        LUA_EXEC_FINISH,
        LUA_EXEC_GET,
        LUA_EXEC_PROGRESS,
        LUA_GRANT,
        LUA_HEARTBEAT,
        LUA_INTENT_PUSH,
        LUA_INTENTS_TAKE,
        LUA_KEY_CREATE,
        LUA_KEY_LIST,
        LUA_KEY_LOOKUP,
        LUA_KEY_REVOKE,
        LUA_KEY_ROTATE,
        LUA_LEASE_ACTIVATE,
        LUA_LEASE_FAIL,
        LUA_LEASE_STALE,
        LUA_LOCK,
        LUA_OSB_ANSWERED,
        LUA_OSB_CREATE,
        LUA_OSB_DELETE,
        LUA_OSB_LIST,
        LUA_OSB_METADATA,
        LUA_OSB_RENEW,
        LUA_OSB_UNANSWERED,
        LUA_POLL,
        LUA_REAP,
        LUA_RELEASE,
        LUA_SANDBOX_CLAIM,
        LUA_SANDBOX_SCAN,
        LUA_SANDBOX_STATE,
        LUA_SNAPSHOT_BEGIN,
        LUA_SNAPSHOT_GET,
        LUA_SNAPSHOT_LIST,
        LUA_SNAPSHOT_REAP,
        LUA_SNAPSHOT_STATE,
        LUA_STATUS,
        LUA_TEARDOWN_PURGED,
        LUA_TEMPLATE_CREATE,
        LUA_TEMPLATE_DELETE,
        LUA_TEMPLATE_GET,
        LUA_TEMPLATE_LIST,
        LUA_TEARDOWN_TAKE,
        LUA_TENANT_LIST,
        LUA_TENANT_STATUS,
        LUA_TENANT_SET,
        LUA_TOKEN_CHECK,
        LUA_TOKEN_ISSUE,
        LUA_TOKEN_ROTATE,
        LUA_UNLOCK,
        LUA_VAULT_CAS,
        LUA_VAULT_GET,
        LUA_WPOOL,
        LUA_SCRIPT_COUNT,
};

struct lua_script {
        const char *name;
        const char *source;
};

extern const struct lua_script lua_scripts[LUA_SCRIPT_COUNT];
