// Command coredns is CoreDNS with only the plugins the real-node test cluster uses, so it builds
// in a fraction of the time of the full distribution (which links every cloud provider's SDK).
// The plugin order is CoreDNS's own (plugin.cfg), restricted to these plugins.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/rewrite"
	_ "github.com/coredns/coredns/plugin/template"
)

func init() {
	dnsserver.Directives = []string{
		"bind", "ready", "health", "errors", "log", "cache", "rewrite", "template", "hosts", "kubernetes", "loop",
	}
}

func main() { coremain.Run() }
