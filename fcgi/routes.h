/* routes: the one route table of every FastCGI handler program. */
#pragma once
#include "request.h"

typedef void (*route_handler)(struct request *req);

/* True if some route belongs to group (e.g. "leases", "status"). */
int routes_group_known(const char *group);

/* Route req among the routes of group: the handler, or 404 / 405 (with an
 * Allow header) answered here. */
void routes_dispatch(const char *group, struct request *req);

/* Handlers (h_*.c). */
void h_health(struct request *req);
void h_version(struct request *req);
void h_osb_not_implemented(struct request *req);
void h_snap_create(struct request *req);
void h_snap_list(struct request *req);
void h_snap_get(struct request *req);
void h_snap_delete(struct request *req);
void h_tpl_create(struct request *req);
void h_tpl_list(struct request *req);
void h_tpl_get(struct request *req);
void h_tpl_delete(struct request *req);
void h_status(struct request *req);
void h_metrics(struct request *req);
void h_leases_acquire(struct request *req);
void h_leases_poll(struct request *req);
void h_leases_heartbeat(struct request *req);
void h_leases_release(struct request *req);
void h_sbx_exec(struct request *req);
void h_sbx_exec_get(struct request *req);
void h_sbx_file_read(struct request *req);
void h_sbx_file_write(struct request *req);
void h_sbx_start(struct request *req);
void h_sbx_stop(struct request *req);
void h_sbx_delete(struct request *req);
void h_osb_create(struct request *req);
void h_osb_list(struct request *req);
void h_osb_get(struct request *req);
void h_osb_diag_logs(struct request *req);
void h_osb_diag_events(struct request *req);
void h_osb_delete(struct request *req);
void h_osb_pause(struct request *req);
void h_osb_resume(struct request *req);
void h_osb_renew(struct request *req);
void h_osb_metadata(struct request *req);
void h_osb_endpoint(struct request *req);
void h_osb_token_rotate(struct request *req);
void h_osb_metrics_event(struct request *req);
void h_volumes_list(struct request *req);
void h_volumes_delete(struct request *req);
void h_execd_ping(struct request *req);
void h_execd_run_command(struct request *req);
void h_execd_command_interrupt(struct request *req);
void h_execd_command_status(struct request *req);
void h_execd_command_logs(struct request *req);
void h_execd_upload(struct request *req);
void h_execd_download(struct request *req);
void h_execd_files_info(struct request *req);
void h_execd_files_delete(struct request *req);
void h_execd_dirs_create(struct request *req);
void h_execd_dirs_delete(struct request *req);
void h_execd_metrics(struct request *req);
void h_execd_files_mv(struct request *req);
void h_execd_files_chmod(struct request *req);
void h_execd_files_search(struct request *req);
void h_execd_files_replace(struct request *req);
void h_execd_dirs_list(struct request *req);
void h_execd_session_create(struct request *req);
void h_execd_session_run(struct request *req);
void h_execd_session_delete(struct request *req);
void h_execd_code_context_create(struct request *req);
void h_execd_code_contexts_list(struct request *req);
void h_execd_code_contexts_delete(struct request *req);
void h_execd_code_context_get(struct request *req);
void h_execd_code_context_delete(struct request *req);
void h_execd_code_run(struct request *req);
void h_execd_code_interrupt(struct request *req);
void h_execd_metrics_watch(struct request *req);
void h_egress_policy_get(struct request *req);
void h_ingress_auth(struct request *req);
void h_egress_policy_change(struct request *req);
void h_vault_get(struct request *req);
void h_vault_change(struct request *req);
void h_execd_not_implemented(struct request *req);
