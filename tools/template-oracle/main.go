// Command template-oracle renders Go text/template strings exactly as Kanister
// does (sprig v2.22.0 TxtFuncMap, FIPS stubs, missingkey=error) over
// parameters shaped like Kanister's param.TemplateParams. It is the reference
// for the differential tests of blueprint-operator's template engine.
//
// stdin: {"cases":[{"template":"...","params":{...},"now":"RFC3339Nano"}]}
// stdout: [{"ok":true,"output":"..."} | {"ok":false,"error":"..."}]
// -bench N: render every case N times and print {"templates_per_sec":X}.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"text/template"
	"time"

	"github.com/Masterminds/sprig"
)

// Mirrors of Kanister's param types (same Go field names and JSON tags), so
// that a field path renders here exactly when it renders in Kanister. The
// Kubernetes types carry their other fields too (all empty in the cases,
// omitted by toJson as their omitempty tags say), so that a path through a
// field the Rust model leaves out still renders; creationTimestamp,
// ownerReferences and managedFields are left out (their zero values would
// change toJson).

type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

type ObjectMeta struct {
	Name                       string            `json:"name,omitempty"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	SelfLink                   string            `json:"selfLink,omitempty"`
	UID                        string            `json:"uid,omitempty"`
	ResourceVersion            string            `json:"resourceVersion,omitempty"`
	Generation                 int64             `json:"generation,omitempty"`
	DeletionTimestamp          *time.Time        `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	Finalizers                 []string          `json:"finalizers,omitempty"`
}

type Secret struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
	Type       string            `json:"type,omitempty"`
}

type ConfigMap struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

type StatefulSetParams struct {
	Name                   string
	Namespace              string
	Pods                   []string
	Containers             [][]string
	PersistentVolumeClaims map[string]map[string]string
}

type DeploymentConfigParams StatefulSetParams

type DeploymentParams StatefulSetParams

type PVCParams struct {
	Name      string
	Namespace string
}

type NamespaceParams PVCParams

type Artifact struct {
	KeyValue      map[string]string `json:"keyValue,omitempty"`
	KopiaSnapshot string            `json:"kopiaSnapshot,omitempty"`
}

type Location struct {
	Type     string `json:"type"`
	Bucket   string `json:"bucket"`
	Endpoint string `json:"endpoint"`
	Prefix   string `json:"prefix"`
	Region   string `json:"region"`
}

type KeyPair struct {
	ID     string
	Secret string
}

type KopiaServerCreds struct {
	Username       string
	Hostname       string
	Password       string
	Cert           string
	ConnectOptions map[string]int
}

type Credential struct {
	Type              string
	KeyPair           *KeyPair
	Secret            *Secret
	KopiaServerSecret *KopiaServerCreds
}

type Profile struct {
	Location      Location
	Credential    Credential
	SkipSSLVerify bool
}

type Phase struct {
	Secrets    map[string]Secret
	ConfigMaps map[string]ConfigMap
	Output     map[string]interface{}
}

type TemplateParams struct {
	StatefulSet      *StatefulSetParams
	DeploymentConfig *DeploymentConfigParams
	Deployment       *DeploymentParams
	PVC              *PVCParams
	Namespace        *NamespaceParams
	ArtifactsIn      map[string]Artifact
	ConfigMaps       map[string]ConfigMap
	Secrets          map[string]Secret
	Time             string
	Profile          *Profile
	Options          map[string]string
	Object           map[string]interface{}
	Phases           map[string]*Phase
	DeferPhase       *Phase
	CurrentPhase     *Phase
	PodOverride      map[string]interface{}
	PodAnnotations   map[string]string
	PodLabels        map[string]string
}

type tcase struct {
	Template string          `json:"template"`
	Params   json.RawMessage `json:"params"`
	Now      string          `json:"now"`
}

type result struct {
	Ok     bool   `json:"ok"`
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// fixNumbers turns json.Number into int64 or float64, as Kubernetes'
// unstructured decoding does.
func fixNumbers(v interface{}) interface{} {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]interface{}:
		for k, e := range x {
			x[k] = fixNumbers(e)
		}
	case []interface{}:
		for i, e := range x {
			x[i] = fixNumbers(e)
		}
	}
	return v
}

func decodeParams(raw json.RawMessage) (*TemplateParams, error) {
	tp := &TemplateParams{}
	if len(raw) == 0 {
		return tp, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(tp); err != nil {
		return nil, err
	}
	tp.Object, _ = fixNumbers(tp.Object).(map[string]interface{})
	tp.PodOverride, _ = fixNumbers(tp.PodOverride).(map[string]interface{})
	fixPhase := func(p *Phase) {
		if p != nil && p.Output != nil {
			p.Output, _ = fixNumbers(p.Output).(map[string]interface{})
		}
	}
	for _, p := range tp.Phases {
		fixPhase(p)
	}
	fixPhase(tp.DeferPhase)
	fixPhase(tp.CurrentPhase)
	return tp, nil
}

func funcMap(now time.Time) template.FuncMap {
	fm := sprig.TxtFuncMap()
	// Kanister's pkg/ksprig: replaces these only where sprig defines them
	// (v2.22.0 has no bcrypt or htpasswd), with the same signatures.
	fips := map[string]interface{}{
		"bcrypt": func(input string) (string, error) {
			return "", fipsErr("bcrypt")
		},
		"derivePassword": func(counter uint32, passwordType, password, user, site string) (string, error) {
			return "", fipsErr("derivePassword")
		},
		"genPrivateKey": func(typ string) (string, error) {
			switch typ {
			case "rsa", "ecdsa", "ed25519":
				fn, ok := sprig.TxtFuncMap()["genPrivateKey"].(func(string) string)
				if !ok {
					return "", fipsErr("genPrivateKey")
				}
				return fn(typ), nil
			}
			return "", fipsErr(fmt.Sprintf("genPrivateKey for %s key", typ))
		},
		"htpasswd": func(username string, password string) (string, error) {
			return "", fipsErr("htpasswd")
		},
	}
	for name, fn := range fips {
		if _, ok := fm[name]; ok {
			fm[name] = fn
		}
	}
	// Pin the clock so that outputs are reproducible.
	origDate := fm["date"].(func(string, interface{}) string)
	origDateInZone := fm["dateInZone"].(func(string, interface{}, string) string)
	pin := func(d interface{}) interface{} {
		switch d.(type) {
		case time.Time, *time.Time, int64, int, int32:
			return d
		}
		return now
	}
	fm["now"] = func() time.Time { return now }
	fm["date"] = func(f string, d interface{}) string { return origDate(f, pin(d)) }
	fm["dateInZone"] = func(f string, d interface{}, z string) string { return origDateInZone(f, pin(d), z) }
	return fm
}

func fipsErr(usage string) error {
	return fmt.Errorf("sprig usage of '%s' is not allowed by kanister as it is not FIPS compatible", usage)
}

func render(c tcase) result {
	now := time.Date(2024, 3, 5, 7, 8, 9, 123456789, time.UTC)
	if c.Now != "" {
		if t, err := time.Parse(time.RFC3339Nano, c.Now); err == nil {
			now = t
		}
	}
	tp, err := decodeParams(c.Params)
	if err != nil {
		return result{Error: "params: " + err.Error()}
	}
	t, err := template.New("config").Option("missingkey=error").Funcs(funcMap(now)).Parse(c.Template)
	if err != nil {
		return result{Error: err.Error()}
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, tp); err != nil {
		return result{Error: err.Error()}
	}
	return result{Ok: true, Output: buf.String()}
}

func main() {
	bench := flag.Int("bench", 0, "render every case N times and report templates/second")
	flag.Parse()
	var in struct {
		Cases []tcase `json:"cases"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "bad input:", err)
		os.Exit(2)
	}
	if *bench > 0 {
		// Decode params once, as the Rust bench does; measure parse+execute.
		now := time.Date(2024, 3, 5, 7, 8, 9, 0, time.UTC)
		fm := funcMap(now)
		tps := make([]*TemplateParams, len(in.Cases))
		for i, c := range in.Cases {
			tps[i], _ = decodeParams(c.Params)
		}
		start := time.Now()
		n := 0
		for r := 0; r < *bench; r++ {
			for i, c := range in.Cases {
				t, err := template.New("config").Option("missingkey=error").Funcs(fm).Parse(c.Template)
				if err == nil {
					var buf bytes.Buffer
					_ = t.Execute(&buf, tps[i])
				}
				n++
			}
		}
		el := time.Since(start).Seconds()
		fmt.Printf("{\"templates\":%d,\"seconds\":%f,\"templates_per_sec\":%f}\n", n, el, float64(n)/el)
		return
	}
	out := make([]result, len(in.Cases))
	for i, c := range in.Cases {
		out[i] = render(c)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
}
