//! A plan printed as it is made: per parent that would change (or could
//! not be planned), its operations and the fields they change; then the
//! summary. Text for a person, JSON for a program: the same content, one
//! document, written a parent at a time so nothing waits for the end.

use super::summary::Summary;
use metahook_driver::observe::live::ParentPlan;
use serde_json::Value;
use std::io::{self, Write};

/// How a plan is printed (`--output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For a person.
    Text,
    /// One JSON object: `{"parents": [...], "summary": {...}}`.
    Json,
}

/// The longest a field's value is printed in text (JSON has it whole).
const VALUE_CHARS: usize = 120;

/// Prints a plan to `out`, a parent at a time.
pub struct Printer<W: Write> {
    out: W,
    format: Format,
    /// Parents printed so far.
    printed: usize,
}

impl<W: Write> Printer<W> {
    /// Starts the document.
    pub fn begin(out: W, format: Format) -> io::Result<Self> {
        let mut printer = Printer {
            out,
            format,
            printed: 0,
        };
        if format == Format::Json {
            printer.out.write_all(b"{\"parents\":[")?;
        }
        Ok(printer)
    }

    /// Prints `plan` if the parent would change or could not be planned.
    pub fn parent(&mut self, plan: &ParentPlan) -> io::Result<()> {
        if plan.failure.is_none() && !plan.changes() {
            return Ok(());
        }
        match self.format {
            Format::Json => {
                if self.printed > 0 {
                    self.out.write_all(b",")?;
                }
                self.out.write_all(b"\n")?;
                serde_json::to_writer(&mut self.out, plan)?;
            }
            Format::Text => text_parent(&mut self.out, plan)?,
        }
        self.printed += 1;
        Ok(())
    }

    /// Ends the document with `summary`.
    pub fn end(mut self, summary: &Summary) -> io::Result<()> {
        match self.format {
            Format::Json => {
                if self.printed > 0 {
                    self.out.write_all(b"\n")?;
                }
                self.out.write_all(b"],\n\"summary\":")?;
                serde_json::to_writer(&mut self.out, summary)?;
                self.out.write_all(b"}\n")?;
            }
            Format::Text => text_summary(&mut self.out, summary)?,
        }
        self.out.flush()
    }
}

fn text_parent(out: &mut impl Write, plan: &ParentPlan) -> io::Result<()> {
    let mark = if plan.failure.is_some() { '!' } else { '~' };
    write!(
        out,
        "{mark} {} {}",
        plan.kind,
        name(&plan.namespace, &plan.name)
    )?;
    match plan.hook {
        Some(hook) => writeln!(out, " ({}, {hook})", plan.controller)?,
        None => writeln!(out, " ({})", plan.controller)?,
    }
    for step in plan.steps.iter().filter(|s| s.op != "verifyParent") {
        write!(out, "    {}", step.op)?;
        if let Some(kind) = &step.kind {
            write!(out, " {kind}")?;
        }
        if let Some(object) = &step.name {
            write!(out, " {}", name(&step.namespace, object))?;
        }
        match &step.detail {
            Some(detail) => writeln!(out, " ({detail})")?,
            None => writeln!(out)?,
        }
        for field in &step.changed {
            writeln!(
                out,
                "        {}: {} → {}",
                field.path,
                value(&field.from),
                value(&field.to)
            )?;
        }
    }
    if let Some(failure) = &plan.failure {
        writeln!(out, "    failed: {failure}")?;
    }
    writeln!(out)
}

/// "1 parent", "3 parents".
fn parents(count: usize) -> String {
    match count {
        1 => "1 parent".to_owned(),
        n => format!("{n} parents"),
    }
}

fn text_summary(out: &mut impl Write, summary: &Summary) -> io::Result<()> {
    if summary.changed == 0 && summary.failed == 0 {
        writeln!(
            out,
            "No changes: {}, each as the driver would leave it.",
            parents(summary.parents)
        )?;
    } else {
        writeln!(
            out,
            "Plan: {}: {} unchanged, {} changed, {} refused or failed.",
            parents(summary.parents),
            summary.unchanged,
            summary.changed,
            summary.failed
        )?;
    }
    for op in &summary.operations {
        writeln!(out, "  {} {}: {}", op.op, op.kind, op.count)?;
        for (path, count) in &op.fields {
            writeln!(out, "      {path}: {count}")?;
        }
    }
    for skipped in &summary.skipped {
        writeln!(out, "Not planned: {skipped}")?;
    }
    Ok(())
}

fn name(namespace: &Option<String>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

/// A value on one line: `(none)` for nothing, JSON otherwise, cut short.
fn value(v: &Value) -> String {
    if v.is_null() {
        return "(none)".to_owned();
    }
    let text = v.to_string();
    match text.char_indices().nth(VALUE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}
