//! Evaluator for parsed templates, after Go's `exec.go` (missingkey=error).

use super::TemplateError;
use super::funcs::{self, Ctx};
use super::parse::{Arg, Cmd, Control, Node, Pipe};
use super::print::fmt_v;
use super::value::{GoTime, Value};

/// Caps that keep hostile templates bounded.
const MAX_STEPS: usize = 10_000_000;
const MAX_DEPTH: usize = 200;
const MAX_OUTPUT: usize = 64 << 20;

enum Flow {
    Normal,
    Break,
    Continue,
}

pub struct State<'a> {
    out: String,
    vars: Vec<(String, Value)>,
    steps: usize,
    depth: usize,
    line: usize,
    now: &'a GoTime,
}

type R<T> = Result<T, TemplateError>;

pub fn execute(nodes: &[Node], data: &Value, now: &GoTime) -> R<String> {
    let mut st = State {
        out: String::new(),
        vars: vec![("$".into(), data.clone())],
        steps: 0,
        depth: 0,
        line: 1,
        now,
    };
    st.walk(data, nodes)?;
    Ok(st.out)
}

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
        if self.out.len() > MAX_OUTPUT {
            return self.err("template output exceeded the size limit");
        }
        Ok(())
    }

    fn walk(&mut self, dot: &Value, nodes: &[Node]) -> R<Flow> {
        for n in nodes {
            self.step()?;
            match n {
                Node::Text(t) => self.out.push_str(t),
                Node::Action(line, pipe) => {
                    self.line = *line;
                    let v = self.pipeline(dot, pipe)?;
                    if pipe.decl.is_empty() {
                        match v {
                            Value::Nil => self.out.push_str("<no value>"),
                            v => self.out.push_str(&fmt_v(&v)),
                        }
                    }
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
                self.vars.push((d.clone(), val.clone()));
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
                    return self.err("range count exceeds the step limit");
                }
                (0..(*n).max(0))
                    .map(|i| (Value::Int(i), Value::Int(i)))
                    .collect()
            }
            Value::Nil => Vec::new(),
            other => {
                return self.err(format!("range can't iterate over {}", fmt_v(other)));
            }
        };
        if items.is_empty() {
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
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return self.err("exceeded maximum template depth");
        }
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
                self.vars.push((d.clone(), value.clone()));
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
                self.not_a_function(&cmd.args, &fin, &format!("{lit:?}"))?;
                self.arg(dot, lit)
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
            Arg::Str(s) => Ok(Value::str(s.as_str())),
            Arg::Int(i) => Ok(Value::Int(*i)),
            Arg::Float(f) => Ok(Value::Float(*f)),
            Arg::Bool(b) => Ok(Value::Bool(*b)),
            Arg::Nil => Ok(Value::Nil),
        }
    }

    fn field_chain(
        &mut self,
        _dot: &Value,
        mut recv: Value,
        chain: &[String],
        args: &[Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        let Some((last, init)) = chain.split_last() else {
            return Ok(recv);
        };
        for name in init {
            recv = self.field(name, &recv, false)?;
        }
        let has_args = args.len() > 1 || fin.is_some();
        self.field(last, &recv, has_args)
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
        funcs::call(name, &vals, &ctx).or_else(|e| self.err(format!("error calling {name}: {e}")))
    }
}
