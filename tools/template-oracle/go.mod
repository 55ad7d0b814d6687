module blueprint-operator/tools/template-oracle

go 1.26.0

require github.com/Masterminds/sprig v2.22.0+incompatible

require (
	github.com/Masterminds/goutils v1.1.1 // indirect
	github.com/Masterminds/semver v1.5.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/huandu/xstrings v1.6.3 // indirect
	github.com/imdario/mergo v0.3.16 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	golang.org/x/crypto v0.59.0 // indirect
)
