package pybuf

import (
	"bytes"
	"sort"
	"sync"
)

// kindID is the node kinds the analysis tells apart; all others are kOther.
type kindID uint8

const (
	kOther kindID = iota
	kError
	kModule
	kComment
	kIdentifier
	kAttribute
	kCall
	kArgumentList
	kKeywordArgument
	kImportStatement
	kImportFromStatement
	kFutureImportStatement
	kAliasedImport
	kDottedName
	kRelativeImport
	kWildcardImport
	kExpressionStatement
	kAssignment
	kAugmentedAssignment
	kNamedExpression
	kForStatement
	kForInClause
	kAsPattern
	kAsPatternTarget
	kExceptClause
	kExceptGroupClause
	kTryStatement
	kGlobalStatement
	kNonlocalStatement
	kFunctionDefinition
	kClassDefinition
	kLambda
	kLambdaParameters
	kParameters
	kTypedParameter
	kDefaultParameter
	kTypedDefaultParameter
	kListSplatPattern
	kDictionarySplatPattern
	kListSplat
	kDictionarySplat
	kListComprehension
	kDictComprehension
	kSetComprehension
	kGeneratorExpression
	kPatternList
	kTuplePattern
	kListPattern
	kExpressionList
	kTuple
	kList
	kParenthesizedExpression
	kString
	kConcatenatedString
	kStringContent
	kInterpolation
	kDictionary
	kPair
	kTrue
	kFalse
	kNone
	kInteger
	kFloat
	kUnaryOperator
)

var kindByName = map[string]kindID{
	"ERROR":                    kError,
	"module":                   kModule,
	"comment":                  kComment,
	"identifier":               kIdentifier,
	"attribute":                kAttribute,
	"call":                     kCall,
	"argument_list":            kArgumentList,
	"keyword_argument":         kKeywordArgument,
	"import_statement":         kImportStatement,
	"import_from_statement":    kImportFromStatement,
	"future_import_statement":  kFutureImportStatement,
	"aliased_import":           kAliasedImport,
	"dotted_name":              kDottedName,
	"relative_import":          kRelativeImport,
	"wildcard_import":          kWildcardImport,
	"expression_statement":     kExpressionStatement,
	"assignment":               kAssignment,
	"augmented_assignment":     kAugmentedAssignment,
	"named_expression":         kNamedExpression,
	"for_statement":            kForStatement,
	"for_in_clause":            kForInClause,
	"as_pattern":               kAsPattern,
	"as_pattern_target":        kAsPatternTarget,
	"except_clause":            kExceptClause,
	"except_group_clause":      kExceptGroupClause,
	"try_statement":            kTryStatement,
	"global_statement":         kGlobalStatement,
	"nonlocal_statement":       kNonlocalStatement,
	"function_definition":      kFunctionDefinition,
	"class_definition":         kClassDefinition,
	"lambda":                   kLambda,
	"lambda_parameters":        kLambdaParameters,
	"parameters":               kParameters,
	"typed_parameter":          kTypedParameter,
	"default_parameter":        kDefaultParameter,
	"typed_default_parameter":  kTypedDefaultParameter,
	"list_splat_pattern":       kListSplatPattern,
	"dictionary_splat_pattern": kDictionarySplatPattern,
	"list_splat":               kListSplat,
	"dictionary_splat":         kDictionarySplat,
	"list_comprehension":       kListComprehension,
	"dictionary_comprehension": kDictComprehension,
	"set_comprehension":        kSetComprehension,
	"generator_expression":     kGeneratorExpression,
	"pattern_list":             kPatternList,
	"tuple_pattern":            kTuplePattern,
	"list_pattern":             kListPattern,
	"expression_list":          kExpressionList,
	"tuple":                    kTuple,
	"list":                     kList,
	"parenthesized_expression": kParenthesizedExpression,
	"string":                   kString,
	"concatenated_string":      kConcatenatedString,
	"string_content":           kStringContent,
	"interpolation":            kInterpolation,
	"dictionary":               kDictionary,
	"pair":                     kPair,
	"true":                     kTrue,
	"false":                    kFalse,
	"none":                     kNone,
	"integer":                  kInteger,
	"float":                    kFloat,
	"unary_operator":           kUnaryOperator,
}

// fieldID is the field names the analysis reads.
type fieldID uint8

const (
	fNone fieldID = iota
	fName
	fAlias
	fModuleName
	fLeft
	fRight
	fValue
	fObject
	fAttribute
	fFunction
	fArguments
	fBody
	fParameters
	fKey
	fType
	fSuperclasses
	fReturnType
	fDefinition
	fAlternative
	fTypeParameters
	fArgument
)

var fieldByName = map[string]fieldID{
	"name":            fName,
	"alias":           fAlias,
	"module_name":     fModuleName,
	"left":            fLeft,
	"right":           fRight,
	"value":           fValue,
	"object":          fObject,
	"attribute":       fAttribute,
	"function":        fFunction,
	"arguments":       fArguments,
	"body":            fBody,
	"parameters":      fParameters,
	"key":             fKey,
	"type":            fType,
	"superclasses":    fSuperclasses,
	"return_type":     fReturnType,
	"definition":      fDefinition,
	"alternative":     fAlternative,
	"type_parameters": fTypeParameters,
	"argument":        fArgument,
}

// node is a named syntax node, flattened. Children are linked in source
// order through firstChild/nextSibling; -1 means none.
type node struct {
	start, end  uint32
	parent      int32
	firstChild  int32
	nextSibling int32
	kind        kindID
	field       fieldID
}

// Buffer is the analysis of one version of a buffer's text. It is
// immutable and safe for concurrent use.
type Buffer struct {
	src    []byte
	lines  lineIndex
	nodes  []node // nodes[0] is the module, when the parse produced one
	scopes []scope
	binds  []binding
	idents []ident // identifiers, by start offset
	calls  []int32 // call nodes, in source order
	// callees[i] is what calls[i] calls, resolved on first use.
	callees     []string
	calleesOnce sync.Once
	strs        []int32 // string nodes, by start offset
	imps        []Import
	errors      bool
}

// HasErrors reports whether the text did not parse cleanly.
func (b *Buffer) HasErrors() bool { return b.errors }

func (b *Buffer) text(n int32) string {
	nd := &b.nodes[n]
	return string(b.src[nd.start:nd.end])
}

func (b *Buffer) textBytes(n int32) []byte {
	nd := &b.nodes[n]
	return b.src[nd.start:nd.end]
}

// child returns the first child of n with field f, or -1.
func (b *Buffer) child(n int32, f fieldID) int32 {
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		if b.nodes[c].field == f {
			return c
		}
	}
	return -1
}

// firstOfKind returns the first child of n of kind k, or -1.
func (b *Buffer) firstOfKind(n int32, k kindID) int32 {
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		if b.nodes[c].kind == k {
			return c
		}
	}
	return -1
}

func (b *Buffer) span(n int32) Span {
	return b.spanOf(int(b.nodes[n].start), int(b.nodes[n].end))
}

func (b *Buffer) spanOf(start, end int) Span {
	return Span{b.lines.pos(start), b.lines.pos(end)}
}

// inError reports whether n lies inside an ERROR node.
func (b *Buffer) inError(n int32) bool {
	for p := b.nodes[n].parent; p >= 0; p = b.nodes[p].parent {
		if b.nodes[p].kind == kError {
			return true
		}
	}
	return false
}

// innermost returns the deepest node that contains off (start <= off <
// end), or -1.
func (b *Buffer) innermost(off int) int32 {
	if len(b.nodes) == 0 {
		return -1
	}
	o := uint32(off)
	n := int32(0)
	if o < b.nodes[0].start || o >= b.nodes[0].end {
		return -1
	}
	for {
		next := int32(-1)
		for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
			if b.nodes[c].start <= o && o < b.nodes[c].end {
				next = c
				break
			}
			if b.nodes[c].start > o {
				break
			}
		}
		if next < 0 {
			return n
		}
		n = next
	}
}

// lineIndex holds the start offset of every line.
type lineIndex []int

func newLineIndex(src []byte) lineIndex {
	li := make(lineIndex, 1, 1+bytes.Count(src, []byte{'\n'}))
	for off := 0; ; {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return li
		}
		off += i + 1
		li = append(li, off)
	}
}

// bounds returns the start and end (before "\r\n" or "\n") of line.
func (li lineIndex) bounds(src []byte, line int) (start, end int) {
	start = li[line]
	end = len(src)
	if line+1 < len(li) {
		end = li[line+1] - 1
	}
	if end > start && src[end-1] == '\r' {
		end--
	}
	return start, end
}

// offset converts p to a byte offset; ok is false when p is outside the
// text (a column past the end of the line included).
func (li lineIndex) offset(src []byte, p Pos) (int, bool) {
	if p.Line < 0 || p.Line >= len(li) || p.Col < 0 {
		return 0, false
	}
	start, end := li.bounds(src, p.Line)
	if p.Col > end-start {
		return 0, false
	}
	return start + p.Col, true
}

func (li lineIndex) pos(off int) Pos {
	line := sort.SearchInts(li, off+1) - 1
	return Pos{Line: line, Col: off - li[line]}
}
