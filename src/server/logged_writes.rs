//! The commands as persistence sees them: `ApplyLogged`, which runs a logged write, at start-up
//! and in compactions.

use super::Shared;
use crate::cmd::{self, Ctx, Session};
use crate::persist::recovery::{ApplyLogged, Logged};
use crate::protocol::{Protocol, Reply};
use crate::store::{now_ms, Store};
use std::sync::Arc;

/// Runs logged writes as a client that is always allowed, at start-up and in compactions.
pub(super) struct LoggedWrites<'a> {
    shared: &'a Arc<Shared>,
    session: Session,
    reply: Reply,
}

impl<'a> LoggedWrites<'a> {
    pub(super) fn new(shared: &'a Arc<Shared>) -> LoggedWrites<'a> {
        let client = shared.clients.detached(shared.addr, now_ms());
        LoggedWrites {
            shared,
            session: Session::new(client, true),
            reply: Reply::new(Protocol::Resp2),
        }
    }
}

impl ApplyLogged for LoggedWrites<'_> {
    fn apply(&mut self, store: &Store, write: Logged) -> Result<(), String> {
        self.session.db = write.db;
        let mut ctx = Ctx {
            server: self.shared,
            store,
            session: &mut self.session,
            reply: &mut self.reply,
            now: write.time_ms,
        };
        let applied = cmd::replay(&mut ctx, write.request);
        self.reply.clear();
        applied.map_err(|error| error.message().to_string())
    }
}
