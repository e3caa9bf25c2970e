package store

// Physical table schema shared by the DynamoDB adapter, the emulator set-up,
// the LocalStack init hook and the CDK table definition.
const (
	// AttrPK and AttrSK are the base table's key attributes (strings).
	AttrPK = "pk"
	AttrSK = "sk"
	// AttrData holds Item.Data (binary).
	AttrData = "d"
	// AttrVersion holds Item.Version (number).
	AttrVersion = "v"
	// AttrTTL holds Item.ExpiresAt as epoch seconds (number); it is the
	// table's TTL attribute.
	AttrTTL = "ttl"
	// NumPrefix prefixes each Item.Nums entry's attribute name.
	NumPrefix = "n_"
)

// IndexPKAttr and IndexSKAttr name the key attributes of a secondary index:
// "gsi1pk"/"gsi1sk" for "gsi1". Every index projects all attributes.
func IndexPKAttr(index string) string { return index + "pk" }
func IndexSKAttr(index string) string { return index + "sk" }

// DefaultTableName is the table used locally and against emulators.
const DefaultTableName = "agentplane"
