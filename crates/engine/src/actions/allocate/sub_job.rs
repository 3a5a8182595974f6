//! The sub-job side of allocate's bookkeeping (spec/framework.md §5.5.7, §6.2.3): which roles
//! of a sub-job already failed, and whether its other tasks are still worth trying.

use std::collections::BTreeSet;

use crate::framework::Session;
use crate::model::{JobId, SubJobId, TaskId};

/// `FitFailedRoles`: the roles of the sub-job's tasks that have fit errors.
fn failed_roles(ssn: &Session, job: JobId, sub_job: SubJobId) -> BTreeSet<&str> {
    let j = ssn.state.job(job);
    let members = j.sub_job_tasks(sub_job);
    j.nodes_fit_errors
        .keys()
        .filter(|t| sub_job == SubJobId::WHOLE_JOB || members.contains(t))
        .filter(|t| j.tasks.contains(t))
        .map(|t| ssn.state.task(*t).spec.role.as_str())
        .collect()
}

/// `TaskHasFitErrors`: a task of a role that already failed in this sub-job is not tried
/// again (tasks without a role always are).
pub(super) fn task_has_fit_errors(
    ssn: &Session,
    job: JobId,
    sub_job: SubJobId,
    task: TaskId,
) -> bool {
    if sub_job == SubJobId::WHOLE_JOB {
        return ssn
            .state
            .job(job)
            .task_has_fit_errors(ssn.state.tasks(), task);
    }
    let role = ssn.state.task(task).spec.role.as_str();
    !role.is_empty() && failed_roles(ssn, job, sub_job).contains(role)
}

/// `NeedContinueAllocating` for a sub-job: a sub-job (or job) that needs all its tasks stops
/// at the first failure; a job with sub-group policies otherwise goes on; a job without keeps
/// its role rules.
pub(super) fn need_continue_allocating(ssn: &Session, job: JobId, sub_job: SubJobId) -> bool {
    let j = ssn.state.job(job);
    if j.spec.min_available as usize == j.tasks.len() {
        return false;
    }
    if j.sub_job_min_available(sub_job) as usize >= j.sub_job_tasks(sub_job).len() {
        return false;
    }
    if j.has_sub_job_policy() {
        return true;
    }
    j.need_continue_allocating(ssn.state.tasks())
}
