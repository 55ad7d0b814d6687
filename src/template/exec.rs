//! Evaluator for parsed templates, after Go's `exec.go` (missingkey=error).

use super::TemplateError;
use super::args::Ctx;
use super::error;
use super::funcs;
use super::limits::{
    self, MAX_EXEC_DEPTH, MAX_LIST, MAX_OUTPUT, MAX_STEPS, MAX_STRING, MAX_VALUE_DEPTH, MAX_WORK,
};
use super::parse::{Arg, Call, Cmd, Control, Node, Pipe, ROOT_NAME, Tree};
use super::print::fmt_v;
use super::semver::Version;
use super::sprig_semver::{self, MethodError};
use super::value::{GoTime, Value};
use std::borrow::Cow;

enum Flow {
    Normal,
    Break,
    Continue,
}

pub struct State<'a> {
    out: String,
    vars: Vec<(String, Value)>,
    steps: usize,
    /// Bytes and elements produced by function calls so far (see `MAX_WORK`).
    work: usize,
    depth: usize,
    line: usize,
    now: &'a GoTime,
    tree: &'a Tree<'a>,
}

type R<T> = Result<T, TemplateError>;

pub fn execute(tree: &Tree<'_>, data: &Value, now: &GoTime) -> R<String> {
    let mut st = State {
        out: String::new(),
        vars: vec![("$".into(), data.clone())],
        steps: 0,
        work: 0,
        depth: 0,
        line: 1,
        now,
        tree,
    };
    st.walk(data, &tree.root)?;
    Ok(st.out)
}

/// Functions that change their first argument in place in Go (maps are
/// references there); our values are immutable, so the result is written
/// back to the variable that was passed (see docs/template-engine.md, "Differences from Kanister").
const MUTATORS: &[&str] = &["set", "unset", "merge", "mergeOverwrite"];

impl State<'_> {
    fn err<T>(&self, msg: impl Into<String>) -> R<T> {
        Err(TemplateError::Exec {
            line: self.line,
            msg: msg.into(),
        })
    }

    fn step(&mut self) -> R<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return self.err("template execution exceeded the step limit");
        }
        Ok(())
    }

    fn emit(&mut self, s: &str) -> R<()> {
        if self.out.len() + s.len() > MAX_OUTPUT {
            return self.err(format!(
                "template output is larger than {}, the limit of one rendered string; render less data",
                limits::human(MAX_OUTPUT)
            ));
        }
        self.out.push_str(s);
        Ok(())
    }

    /// One more level of evaluation (block body, pipeline or template call).
    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_EXEC_DEPTH {
            self.depth -= 1;
            return self.err(format!(
                "exceeded maximum template depth ({MAX_EXEC_DEPTH}): blocks, parenthesized \
                 pipelines and template calls nest deeper than that; check for a template \
                 that calls itself without an end"
            ));
        }
        Ok(())
    }

    /// Check a function result against the value limits and charge its size.
    fn account(&mut self, name: &str, v: &Value) -> R<()> {
        let what = || format!("error calling {name}: the result");
        let size = match v {
            Value::Str(s) => {
                if s.len() > MAX_STRING {
                    return self.err(error::string_too_long(&what()).to_string());
                }
                s.len()
            }
            Value::Bytes(b) => b.len(),
            Value::List(l, _) => {
                if l.len() > MAX_LIST {
                    return self.err(error::list_too_long(&what()).to_string());
                }
                l.len()
            }
            Value::Map(m) => {
                if m.entries.len() > MAX_LIST {
                    return self.err(error::list_too_long(&what()).to_string());
                }
                m.entries.len()
            }
            _ => 1,
        };
        if v.depth() > MAX_VALUE_DEPTH {
            return self.err(format!(
                "{} nests lists and dicts more than {MAX_VALUE_DEPTH} deep; build flatter values",
                what()
            ));
        }
        self.work = self.work.saturating_add(size.max(1));
        if self.work > MAX_WORK {
            return self.err(format!(
                "the functions of this template produced more than {} of data, the limit of one \
                 render; render less data",
                limits::human(MAX_WORK)
            ));
        }
        Ok(())
    }

    fn walk(&mut self, dot: &Value, nodes: &[Node]) -> R<Flow> {
        self.enter()?;
        let r = self.walk_inner(dot, nodes);
        self.depth -= 1;
        r
    }

    fn walk_inner(&mut self, dot: &Value, nodes: &[Node]) -> R<Flow> {
        for n in nodes {
            self.step()?;
            match n {
                Node::Text(t) => self.emit(t)?,
                Node::Action(line, pipe) => {
                    self.line = *line;
                    let v = self.pipeline(dot, pipe)?;
                    if pipe.decl.is_empty() {
                        match v {
                            Value::Nil => self.emit("<no value>")?,
                            v => {
                                let s = fmt_v(&v);
                                self.emit(&s)?;
                            }
                        }
                    }
                }
                Node::Template(call) => {
                    self.line = call.line;
                    self.call_template(dot, call)?;
                }
                Node::If(c) | Node::With(c) => {
                    self.line = c.line;
                    let mark = self.vars.len();
                    let v = self.pipeline(dot, &c.pipe)?;
                    let truth = v.truth();
                    let flow = if truth {
                        let d = if matches!(n, Node::With(_)) {
                            v
                        } else {
                            dot.clone()
                        };
                        self.walk(&d, &c.list)
                    } else if let Some(e) = &c.else_list {
                        self.walk(dot, e)
                    } else {
                        Ok(Flow::Normal)
                    };
                    self.vars.truncate(mark);
                    match flow? {
                        Flow::Normal => {}
                        f => return Ok(f),
                    }
                }
                Node::Range(c) => {
                    self.line = c.line;
                    self.range(dot, c)?;
                }
                Node::Break(_) => return Ok(Flow::Break),
                Node::Continue(_) => return Ok(Flow::Continue),
            }
        }
        Ok(Flow::Normal)
    }

    /// `{{template "name" pipeline}}`: Go gives the callee only `$` = dot.
    fn call_template(&mut self, dot: &Value, call: &Call) -> R<()> {
        let tree = self.tree;
        let body = if call.name == ROOT_NAME {
            Some(&tree.root)
        } else {
            tree.defs.get(&call.name)
        };
        let Some(body) = body else {
            return self.err(format!("template {:?} not defined", call.name));
        };
        let d = match &call.pipe {
            Some(p) => self.pipeline(dot, p)?,
            None => Value::Nil,
        };
        let vars = std::mem::replace(&mut self.vars, vec![("$".into(), d.clone())]);
        let r = self.walk(&d, body);
        self.vars = vars;
        r.map(|_| ())
    }

    fn range(&mut self, dot: &Value, c: &Control) -> R<()> {
        let mark0 = self.vars.len();
        let inner = Pipe {
            decl: Vec::new(),
            is_assign: false,
            cmds: c.pipe.cmds.clone(),
        };
        let val = self.pipeline(dot, &inner)?;
        if !c.pipe.is_assign {
            for d in &c.pipe.decl {
                self.vars.push((d.to_string(), val.clone()));
            }
        }
        let items: Vec<(Value, Value)> = match &val {
            Value::List(l, _) => l
                .iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i as i64), v.clone()))
                .collect(),
            Value::Bytes(b) => b
                .iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i as i64), Value::Int(*v as i64)))
                .collect(),
            Value::Map(m) => m
                .entries
                .iter()
                .map(|(k, v)| (Value::str(k.as_str()), v.clone()))
                .collect(),
            Value::Int(n) => {
                if c.pipe.decl.len() > 1 {
                    return self.err(format!(
                        "can't use {n} to iterate over more than one variable"
                    ));
                }
                if *n as u64 > MAX_STEPS as u64 {
                    return self.err(format!(
                        "range over {n} exceeds the limit of {MAX_STEPS} evaluation steps of one render"
                    ));
                }
                return self.range_items(
                    dot,
                    c,
                    mark0,
                    (0..(*n).max(0)).map(|i| (Value::Int(i), Value::Int(i))),
                );
            }
            Value::Nil => Vec::new(),
            other => {
                return self.err(format!("range can't iterate over {}", fmt_v(other)));
            }
        };
        self.range_items(dot, c, mark0, items.into_iter())
    }

    fn range_items(
        &mut self,
        dot: &Value,
        c: &Control,
        mark0: usize,
        items: impl Iterator<Item = (Value, Value)>,
    ) -> R<()> {
        let mut items = items.peekable();
        if items.peek().is_none() {
            if let Some(e) = &c.else_list {
                let r = self.walk(dot, e);
                self.vars.truncate(mark0);
                r?;
            }
            self.vars.truncate(mark0);
            return Ok(());
        }
        let mark = self.vars.len();
        let n = c.pipe.decl.len();
        for (idx, elem) in items {
            self.step()?;
            if n > 0 {
                if c.pipe.is_assign {
                    let target = if n > 1 { idx.clone() } else { elem.clone() };
                    self.set_var(&c.pipe.decl[0], target)?;
                } else {
                    self.vars[mark - 1].1 = elem.clone();
                }
            }
            if n > 1 {
                if c.pipe.is_assign {
                    self.set_var(&c.pipe.decl[1], elem.clone())?;
                } else {
                    self.vars[mark - 2].1 = idx.clone();
                }
            }
            let r = self.walk(&elem, &c.list);
            self.vars.truncate(mark);
            match r? {
                Flow::Break => break,
                Flow::Continue | Flow::Normal => {}
            }
        }
        self.vars.truncate(mark0);
        Ok(())
    }

    fn set_var(&mut self, name: &str, v: Value) -> R<()> {
        match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
            Some(slot) => {
                slot.1 = v;
                Ok(())
            }
            None => self.err(format!("undefined variable: {name}")),
        }
    }

    fn var(&self, name: &str) -> R<Value> {
        match self.vars.iter().rev().find(|(n, _)| n == name) {
            Some((_, v)) => Ok(v.clone()),
            None => self.err(format!("undefined variable: {name}")),
        }
    }

    fn pipeline(&mut self, dot: &Value, pipe: &Pipe) -> R<Value> {
        self.enter()?;
        let r = self.pipeline_inner(dot, pipe);
        self.depth -= 1;
        r
    }

    fn pipeline_inner(&mut self, dot: &Value, pipe: &Pipe) -> R<Value> {
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            self.step()?;
            value = Some(self.command(dot, cmd, value)?);
        }
        let value = value.unwrap_or_default();
        for d in &pipe.decl {
            if pipe.is_assign {
                self.set_var(d, value.clone())?;
            } else {
                self.vars.push((d.to_string(), value.clone()));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &[Arg], fin: &Option<Value>, what: &str) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            return self.err(format!("can't give argument to non-function {what}"));
        }
        Ok(())
    }

    fn command(&mut self, dot: &Value, cmd: &Cmd, fin: Option<Value>) -> R<Value> {
        let first = &cmd.args[0];
        match first {
            Arg::Field(chain) => self.field_chain(dot, dot.clone(), chain, &cmd.args, fin),
            Arg::Chain(inner, chain) => {
                let v = self.arg(dot, inner)?;
                self.field_chain(dot, v, chain, &cmd.args, fin)
            }
            Arg::Variable(name, chain) => {
                let v = self.var(name)?;
                if chain.is_empty() {
                    self.not_a_function(&cmd.args, &fin, name)?;
                    return Ok(v);
                }
                self.field_chain(dot, v, chain, &cmd.args, fin)
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &fin, "pipeline")?;
                self.pipeline(dot, p)
            }
            Arg::Func(name) => self.function(dot, name, &cmd.args, fin),
            Arg::Nil => self.err("nil is not a command"),
            lit => {
                let v = self.arg(dot, lit)?;
                self.not_a_function(&cmd.args, &fin, &fmt_v(&v))?;
                Ok(v)
            }
        }
    }

    fn arg(&mut self, dot: &Value, a: &Arg) -> R<Value> {
        match a {
            Arg::Field(chain) => self.field_chain(dot, dot.clone(), chain, &[], None),
            Arg::Dot => Ok(dot.clone()),
            Arg::Variable(name, chain) => {
                let v = self.var(name)?;
                self.field_chain(dot, v, chain, &[], None)
            }
            Arg::Func(name) => self.function(dot, name, std::slice::from_ref(a), None),
            Arg::Chain(inner, chain) => {
                let v = self.arg(dot, inner)?;
                self.field_chain(dot, v, chain, &[], None)
            }
            Arg::Pipe(p) => self.pipeline(dot, p),
            Arg::Str(s) => Ok(Value::str(&**s)),
            Arg::Int(i) => Ok(Value::Int(*i)),
            Arg::Float(f) => Ok(Value::Float(*f)),
            Arg::Bool(b) => Ok(Value::Bool(*b)),
            Arg::Nil => Ok(Value::Nil),
        }
    }

    fn field_chain(
        &mut self,
        dot: &Value,
        mut recv: Value,
        chain: &[Cow<'_, str>],
        args: &[Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        let Some((last, init)) = chain.split_last() else {
            return Ok(recv);
        };
        for name in init {
            recv = match &recv {
                Value::Semver(v, ptr) => self.semver_method(v, *ptr, name, Vec::new())?,
                _ => self.field(name, &recv, false)?,
            };
        }
        if let Value::Semver(v, ptr) = &recv {
            // Go checks the method and its argument count before evaluating arguments.
            sprig_semver::method_arity(last, *ptr).or_else(|e| self.method_err(last, e))?;
            let mut vals = Vec::with_capacity(args.len());
            for a in args.iter().skip(1) {
                vals.push(self.arg(dot, a)?);
            }
            vals.extend(fin);
            return self.semver_method(v, *ptr, last, vals);
        }
        let has_args = args.len() > 1 || fin.is_some();
        self.field(last, &recv, has_args)
    }

    /// A method of a semver version (the only Go values with methods here).
    fn semver_method(&self, v: &Version, ptr: bool, name: &str, args: Vec<Value>) -> R<Value> {
        sprig_semver::call_method(v, ptr, name, &args).or_else(|e| self.method_err(name, e))
    }

    fn method_err<T>(&self, name: &str, e: MethodError) -> R<T> {
        match e {
            MethodError::NoField(m) => self.err(m),
            MethodError::Args(e) => self.err(e.to_string()),
            MethodError::Call(m) => self.err(format!("error calling {name}: {m}")),
        }
    }

    fn field(&self, name: &str, recv: &Value, has_args: bool) -> R<Value> {
        match recv {
            Value::Struct(s) => match s.get(name) {
                Some(v) => {
                    if has_args {
                        return self.err(format!(
                            "{name} has arguments but cannot be invoked as function"
                        ));
                    }
                    Ok(v.clone())
                }
                None => self.err(format!("can't evaluate field {name} in type {}", s.ty)),
            },
            Value::Map(m) => {
                if has_args {
                    return self.err(format!("{name} is not a method but has arguments"));
                }
                match m.entries.get(name) {
                    Some(v) => Ok(v.clone()),
                    None => Err(TemplateError::MissingKey {
                        key: name.to_string(),
                        line: self.line,
                    }),
                }
            }
            Value::NilPtr(t) => self.err(format!("nil pointer evaluating *{t}.{name}")),
            Value::Nil => self.err(format!("nil pointer evaluating interface {{}}.{name}")),
            other => self.err(format!(
                "can't evaluate field {name} in type {}",
                other.type_name()
            )),
        }
    }

    fn function(&mut self, dot: &Value, name: &str, args: &[Arg], fin: Option<Value>) -> R<Value> {
        let rest = &args[1..];
        if name == "and" || name == "or" {
            if rest.is_empty() && fin.is_none() {
                return self.err(format!(
                    "wrong number of args for {name}: want at least 1 got 0"
                ));
            }
            let mut last = Value::Nil;
            for a in rest {
                last = self.arg(dot, a)?;
                if last.truth() == (name == "or") {
                    return Ok(last);
                }
            }
            if let Some(f) = fin {
                last = f;
            }
            return Ok(last);
        }
        let mut vals = Vec::with_capacity(rest.len() + 1);
        for a in rest {
            vals.push(self.arg(dot, a)?);
        }
        if let Some(f) = fin {
            vals.push(f);
        }
        let ctx = Ctx { now: self.now };
        let v = funcs::call(name, &vals, &ctx)
            .or_else(|e| self.err(format!("error calling {name}: {e}")))?;
        self.account(name, &v)?;
        if MUTATORS.contains(&name)
            && let Some(Arg::Variable(var, chain)) = rest.first()
            && chain.is_empty()
            && matches!(v, Value::Map(_))
        {
            self.set_var(var, v.clone())?;
        }
        Ok(v)
    }
}
