"""Judge: did threads and pages go where the placement asked?"""
