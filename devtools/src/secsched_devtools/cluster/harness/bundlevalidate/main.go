// Command bundle-validate judges an OLM bundle directory with operator-framework's own
// validators: the ones `operator-sdk bundle validate` runs by default (CSV, CRD and bundle
// validators of github.com/operator-framework/api), over the objects its bundle loader reads.
//
// Usage: bundle-validate [--optional] BUNDLE_DIR
//
// It prints one JSON object per finding on stdout, {"level", "type", "field", "detail",
// "manifest"}, and exits 1 when any finding is an error, 2 when the bundle cannot be read,
// 0 otherwise (warnings alone pass, as they do for operator-sdk). --optional adds the
// good-practices and deprecated-API validators operator-sdk offers with --select-optional.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	validationerrors "github.com/operator-framework/api/pkg/validation/errors"
)

// finding is one error or warning, flattened so a test can read it without Go's types.
type finding struct {
	Level    string `json:"level"`
	Type     string `json:"type"`
	Field    string `json:"field,omitempty"`
	Value    string `json:"value,omitempty"`
	Detail   string `json:"detail"`
	Manifest string `json:"manifest"`
}

func main() {
	optional := flag.Bool("optional", false, "also run the good-practices and deprecated-API validators")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: bundle-validate [--optional] BUNDLE_DIR")
		os.Exit(2)
	}
	// The loader reads manifests/ (CSV, CRDs, other objects) and metadata/annotations.yaml.
	bundle, err := manifests.GetBundleFromDir(flag.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %s: cannot load the bundle: %v\n", flag.Arg(0), err)
		os.Exit(2)
	}
	if bundle.CSV == nil {
		fmt.Fprintf(os.Stderr, "error: %s: no ClusterServiceVersion in manifests/\n", flag.Arg(0))
		os.Exit(2)
	}
	validators := validation.DefaultBundleValidators
	if *optional {
		validators = validators.WithValidators(validation.GoodPracticesValidator, validation.AlphaDeprecatedAPIsValidator)
	}
	encoder := json.NewEncoder(os.Stdout)
	failed := false
	for _, result := range validators.Validate(bundle.ObjectsToValidate()...) {
		for _, problem := range append(append([]validationerrors.Error{}, result.Errors...), result.Warnings...) {
			if problem.Level == validationerrors.LevelError {
				failed = true
			}
			item := finding{
				Level:    string(problem.Level),
				Type:     string(problem.Type),
				Field:    problem.Field,
				Detail:   problem.Detail,
				Manifest: result.Name,
			}
			if problem.BadValue != nil {
				item.Value = fmt.Sprint(problem.BadValue)
			}
			if err := encoder.Encode(item); err != nil {
				fmt.Fprintf(os.Stderr, "error: writing the findings: %v\n", err)
				os.Exit(2)
			}
		}
	}
	if failed {
		os.Exit(1)
	}
}
