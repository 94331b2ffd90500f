// SPDX-License-Identifier: Apache-2.0
//! Collecting the outcome of a check: every unmet expectation is listed, not only
//! the first, and expectations that could not be checked on this host (no running
//! systemd, say) are reported as skipped.

use crate::error::{Error, Result};
use crate::runtime::run::Outcome;

/// The expectations of one check run.
#[derive(Debug, Default)]
pub struct Checklist {
    met: usize,
    unmet: Vec<String>,
    skipped: Vec<String>,
}

impl Checklist {
    /// An empty checklist.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an expectation: met when `ok`, otherwise unmet with `describe()`.
    pub fn expect(&mut self, ok: bool, describe: impl FnOnce() -> String) -> bool {
        if ok {
            self.met += 1;
        } else {
            self.fail(describe());
        }
        ok
    }

    /// Records an expectation the caller has just found met (`what` it was), for
    /// checks whose condition is a match rather than one boolean.
    pub fn pass(&mut self, what: impl std::fmt::Display) {
        log::debug!("met: {what}");
        self.met += 1;
    }

    /// Records one expectation, "none of these problems": met when `problems` is
    /// empty, otherwise each problem is an unmet expectation.
    pub fn expect_none(&mut self, problems: Vec<String>) {
        if problems.is_empty() {
            self.met += 1;
        }
        problems.into_iter().for_each(|p| self.fail(p));
    }

    /// Records an unmet expectation.
    pub fn fail(&mut self, what: impl Into<String>) {
        let what = what.into();
        log::error!("unmet: {what}");
        self.unmet.push(what);
    }

    /// Records an expectation that could not be checked on this host, and why.
    pub fn skip(&mut self, what: impl Into<String>) {
        let what = what.into();
        log::warn!("not checked: {what}");
        self.skipped.push(what);
    }

    /// Records the result of a sub-check: an `Err(Check)` adds its unmet
    /// expectations; any other error is returned.
    pub fn absorb(&mut self, result: Result<()>) -> Result<()> {
        match result {
            Ok(()) => {
                self.met += 1;
                Ok(())
            }
            Err(Error::Check(list)) => {
                self.unmet.extend(list);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The unmet expectations so far.
    pub fn unmet(&self) -> &[String] {
        &self.unmet
    }

    /// Ends the check: `Ok` when every expectation was met, else `Error::Check`
    /// listing each unmet one.
    pub fn finish(self) -> Result<()> {
        log::info!(
            "check: {} met, {} unmet, {} not checked",
            self.met,
            self.unmet.len(),
            self.skipped.len()
        );
        if self.unmet.is_empty() {
            Ok(())
        } else {
            Err(Error::Check(self.unmet))
        }
    }

    /// Ends the check after another engine's check of the same step (a package on
    /// the tuning engine adds its own expectations to the engine's): every unmet
    /// expectation of both, the engine's first; any other error of the engine's
    /// first; else the engine's outcome.
    pub fn finish_after(self, engine: Result<Outcome>) -> Result<Outcome> {
        match (engine, self.finish()) {
            (Err(Error::Check(mut unmet)), Err(Error::Check(more))) => {
                unmet.extend(more);
                Err(Error::Check(unmet))
            }
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
            (Ok(outcome), Ok(())) => Ok(outcome),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_unmet_expectation() {
        let mut c = Checklist::new();
        assert!(c.expect(true, || unreachable!()));
        assert!(!c.expect(false, || "a missing".into()));
        c.fail("b wrong");
        c.skip("service state: systemd not running");
        c.absorb(Err(Error::Check(vec!["c absent".into()]))).unwrap();
        assert!(c.absorb(Err(Error::action("boom"))).is_err());
        match c.finish() {
            Err(Error::Check(list)) => assert_eq!(list, ["a missing", "b wrong", "c absent"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn finish_after_lists_the_engines_unmet_then_its_own_and_keeps_other_errors() {
        let mut own = Checklist::new();
        own.fail("module loaded");
        match own.finish_after(Err(Error::Check(vec!["file changed".into()]))) {
            Err(Error::Check(list)) => assert_eq!(list, ["file changed", "module loaded"]),
            other => panic!("{other:?}"),
        }
        let mut own = Checklist::new();
        own.fail("module loaded");
        assert_eq!(own.finish_after(Err(Error::action("boom"))).unwrap_err().exit_code(), 1);
        match Checklist::new().finish_after(Err(Error::input("bad key"))) {
            Err(Error::Input(_)) => {}
            other => panic!("{other:?}"),
        }
        let mut own = Checklist::new();
        own.fail("module loaded");
        assert!(matches!(own.finish_after(Ok(Outcome::done())), Err(Error::Check(_))));
        assert!(Checklist::new().finish_after(Ok(Outcome::done())).is_ok());
    }

    #[test]
    fn passes_when_all_met_even_with_skips() {
        let mut c = Checklist::new();
        c.pass("tuned-adm verify");
        c.expect_none(Vec::new());
        c.skip("x");
        assert_eq!(c.met, 2);
        assert!(c.finish().is_ok());
    }

    #[test]
    fn expect_none_lists_each_problem() {
        let mut c = Checklist::new();
        c.expect_none(vec!["x overrides y".into(), "z overrides y".into()]);
        assert_eq!(c.met, 0);
        match c.finish() {
            Err(Error::Check(list)) => assert_eq!(list, ["x overrides y", "z overrides y"]),
            other => panic!("{other:?}"),
        }
    }
}
